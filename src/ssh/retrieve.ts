// Retrieval of a pod's results directory: every manifest file streamed to disk, then the whole
// local copy verified against the manifest, and the pod re-listed so that a file written after
// the manifest was made cannot go unnoticed. Only an `ok` result may lead to the pod's deletion.
//
// Verdicts, beyond verifyAgainstManifest's local ones:
//   missing:   also a manifest file that no longer exists on the pod
//   different: also a download whose size or SHA-256 differed from the manifest (such a file is
//              never left at its local path; the pod changed it after the manifest was made)
//   extra:     also an entry now on the pod under remoteDir that the manifest does not list (a file
//              written late, a device, socket or FIFO: nothing there goes unreported)
//   refused:   a symlink whose target leaves the result set: named, never stored or followed
// A symlink whose target stays inside the result set is stored as the same link (never followed).
// Transport failures (connection lost, permission denied, local disk errors) throw instead: they
// say nothing about the results, and the caller retries the retrieval.
import { lstat, mkdir, open, rm, symlink } from 'node:fs/promises';
import { dirname, isAbsolute, posix, relative, sep } from 'node:path';
import type { SshConnection } from './connect.ts';
import { abortError } from './errors.ts';
import { linkTargetProblem, listRemoteFiles, validateManifest, type Manifest, type ManifestFile, type ManifestLink } from './manifest.ts';
import { SftpSession, isNoSuchFile } from './sftp.ts';
import { ContentMismatchError, downloadFile } from './transfer.ts';
import { listLocalEntries, localPathFor, sha256File, verifyAgainstManifest } from './verify.ts';

export interface RetrieveOptions {
  /** Files downloaded at once (each with its own pipelined reads). Default 4. */
  concurrency?: number;
  /** Bound on the remote re-listing after the downloads. Default 10 minutes. */
  listTimeoutMs?: number;
  onProgress?: (progress: RetrieveProgress) => void;
  signal?: AbortSignal;
  /**
   * localDir holds an interrupted try of this same retrieval: files it completed that still match
   * are kept, partial ones continue where they stopped, anything the manifest does not list goes.
   */
  resume?: boolean;
}

export interface RetrieveProgress {
  files: number;
  totalFiles: number;
  bytes: number;
  totalBytes: number;
}

export type RetrieveResult =
  | { ok: true; files: number; bytes: number }
  | { ok: false; files: number; bytes: number; missing: string[]; different: string[]; extra: string[]; refused: string[] };

/**
 * Downloads `manifest`'s files from `remoteDir` into `localDir` (created if needed; without `resume`
 * use a fresh one per attempt, since anything already there that the manifest does not list is "extra").
 * `files`/`bytes` count what was downloaded and matched.
 */
export async function retrieveDirectory(
  conn: SshConnection,
  remoteDir: string,
  localDir: string,
  manifest: Manifest,
  options: RetrieveOptions = {},
): Promise<RetrieveResult> {
  const { files, links = [] } = validateManifest(manifest);
  const { signal } = options;
  const refused = links.flatMap((link) => {
    const problem = linkTargetProblem(link);
    return problem ? [`${link.path} -> ${link.target}: ${problem}`] : [];
  });
  const storedLinks = links.filter((link) => !linkTargetProblem(link));
  await mkdir(localDir, { recursive: true });
  if (options.resume) await keepOnlyResumable(localDir, files);

  const missing = new Set<string>();
  const different = new Set<string>();
  const progress: RetrieveProgress = { files: 0, totalFiles: files.length, bytes: 0, totalBytes: files.reduce((sum, f) => sum + f.size, 0) };
  const inFlightBytes = new Map<string, number>();
  const report = (): void => {
    if (!options.onProgress) return;
    let partial = 0;
    for (const n of inFlightBytes.values()) partial += n;
    options.onProgress({ ...progress, bytes: progress.bytes + partial });
  };

  // Hashed as they were written (or found whole by a resume): the final check reads none of them again.
  const hashed = new Set<string>();
  const sftp = await SftpSession.open(conn);
  try {
    const fetchOne = async (file: ManifestFile): Promise<void> => {
      const localPath = localPathFor(localDir, file.path);
      // validateManifest already refuses such paths; this keeps the guarantee local to the write.
      const rel = relative(localDir, localPath);
      if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) throw new Error(`refusing to write outside ${localDir}: ${file.path}`);
      try {
        if (options.resume && (await alreadyRetrieved(localPath, file))) {
          hashed.add(file.path);
          progress.files += 1;
          progress.bytes += file.size;
          return;
        }
        const result = await downloadFile(conn, posix.join(remoteDir, file.path), localPath, {
          sftp, resume: options.resume ?? false,
          expectedSha256: file.sha256,
          expectedSize: file.size,
          ...(signal ? { signal } : {}),
          onProgress: (bytes) => {
            inFlightBytes.set(file.path, bytes);
            report();
          },
        });
        hashed.add(file.path);
        progress.files += 1;
        progress.bytes += result.bytes;
      } catch (err) {
        if (err instanceof ContentMismatchError) different.add(file.path);
        else if (isNoSuchFile(err)) missing.add(file.path);
        else throw err;
      } finally {
        inFlightBytes.delete(file.path);
        report();
      }
    };
    await runLimited(files, options.concurrency ?? 4, fetchOne, signal);
  } finally {
    sftp.end();
  }
  for (const link of storedLinks) await storeLink(localDir, link);

  const listed = new Set([...files, ...links].map((f) => f.path));
  // The re-listing is silent but bounded by its timeout: it reports (unchanged) progress while it runs,
  // so a slow listing of many files does not read as a stuck transfer.
  const beat = setInterval(report, 10_000);
  const remoteNow = await listRemoteFiles(conn, remoteDir, {
    timeoutMs: options.listTimeoutMs ?? 600_000,
    ...(signal ? { signal } : {}),
  }).finally(() => clearInterval(beat));
  const local = await verifyAgainstManifest({ files, links: storedLinks }, localDir, hashed);

  for (const path of local.different) different.add(path);
  // A mismatched download was never renamed into place, so locally it reads as missing.
  for (const path of local.missing) if (!different.has(path)) missing.add(path);
  const extra = new Set([...local.extra, ...remoteNow.filter((path) => !listed.has(path))]);

  const storedOk = storedLinks.filter((link) => !local.missing.includes(link.path) && !local.different.includes(link.path)).length;
  const counts = { files: progress.files + storedOk, bytes: progress.bytes };
  if (missing.size === 0 && different.size === 0 && extra.size === 0 && refused.length === 0) {
    // An ok result lets the caller delete the pod: the renames must survive a crash first (each
    // file's data was flushed before its rename; the directory entries are flushed here).
    await syncDirectories(localDir, [...files, ...storedLinks]);
    return { ok: true, ...counts };
  }
  return { ok: false, ...counts, missing: [...missing].sort(), different: [...different].sort(), extra: [...extra].sort(), refused: refused.sort() };
}

/** What an interrupted try left that this one can use: listed regular files and their partials. */
async function keepOnlyResumable(localDir: string, files: readonly ManifestFile[]): Promise<void> {
  const usable = new Set(files.flatMap((file) => [file.path, posix.join(posix.dirname(file.path), `.${posix.basename(file.path)}.part`)]));
  for (const path of await listLocalEntries(localDir)) {
    const local = localPathFor(localDir, path);
    if (!usable.has(path) || !(await lstat(local)).isFile()) await rm(local, { force: true });
  }
}

/** A file an earlier try completed, still as the manifest has it; one that is not is removed. */
async function alreadyRetrieved(localPath: string, file: ManifestFile): Promise<boolean> {
  const stats = await lstat(localPath).catch(() => undefined);
  if (!stats) return false;
  if (stats.isFile() && stats.size === file.size && (await sha256File(localPath)) === file.sha256) return true;
  await rm(localPath, { force: true });
  return false;
}

/** The same link, locally (its target was checked to stay inside localDir). */
async function storeLink(localDir: string, link: ManifestLink): Promise<void> {
  const localPath = localPathFor(localDir, link.path);
  const rel = relative(localDir, localPath);
  if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) throw new Error(`refusing to write outside ${localDir}: ${link.path}`);
  await mkdir(dirname(localPath), { recursive: true });
  await symlink(link.target, localPath);
}

/** Runs `work` over `items` with at most `limit` at a time; the first failure stops new work. */
async function runLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>, signal?: AbortSignal): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      if (signal?.aborted) throw abortError(signal);
      const item = items[next++] as T;
      try {
        await work(item);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  const results = await Promise.allSettled(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  const failure = results.find((r) => r.status === 'rejected');
  if (failure) throw failure.reason;
}

async function syncDirectories(localDir: string, files: readonly (ManifestFile | ManifestLink)[]): Promise<void> {
  // Every directory from localDir down to each file: each holds an entry created by this retrieval.
  const dirs = new Set([localDir]);
  for (const file of files) {
    const parts = file.path.split('/').slice(0, -1);
    for (let i = 1; i <= parts.length; i++) dirs.add(localPathFor(localDir, parts.slice(0, i).join('/')));
  }
  for (const dir of dirs) {
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
}
