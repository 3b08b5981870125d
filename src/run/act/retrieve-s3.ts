// Retrieval into object storage: the pod's manifest → what the store already holds exactly (resume)
// → the rest sent (the direct path first, when one is plugged in; else streamed through the
// controller) → every object read back and checked (none missing, different or extra) and the pod
// re-listed (a file written late is extra) → job.log → SHA256SUMS last → only then the `retrieved`
// marker. The outcome is the dir store's RetrievalOutcome, so decide and the transfer pool are unchanged.
import { posix } from 'node:path';
import type { RunpodRunSpec } from '../../api/spec.ts';
import { markRetrievedCommand, parseAck, RETRIEVED_TAG } from '../../pod/index.ts';
import { FileRefusedError, streamFileToS3, type ResultsPath } from '../../results/s3-stream.ts';
import { s3Uri } from '../../results/s3-settings.ts';
import { alreadyStored, verifyObjects, writeSums } from '../../results/s3-verify.ts';
import { resultKey, type S3Target } from '../../results/s3-target.ts';
import { execChecked, listRemoteFiles, SftpSession, type ManifestFile, type SshConnection } from '../../ssh/index.ts';
import { withHeartbeat } from '../ports/heartbeat.ts';
import { describeJobLog } from '../ports/job-log.ts';
import type { RetrievalOutcome } from '../decide/outcome.ts';
import type { DirectOutcome } from '../../results/s3-direct.ts';
import { listingTimeoutMs, resultManifest, type PodDirs, type RetrieveStepOptions } from '../ports/job-steps.ts';

const commandTimeout = { timeoutMs: 30_000 };
/** Files streamed at once: each holds at most ~3 parts (s3-stream.ts), so memory stays bounded. */
const STREAMS = 2;

export interface S3RetrieveOptions extends RetrieveStepOptions {
  /** Tries the direct path for `files` first; `unreachable` falls back to streaming. Absent: streaming only. */
  direct?: (files: ManifestFile[]) => Promise<DirectOutcome>;
}

export async function retrieveResultsToS3(ssh: SshConnection, { runDir, stateDir }: PodDirs, spec: RunpodRunSpec, target: S3Target, options: S3RetrieveOptions = {}): Promise<RetrievalOutcome> {
  const { signal } = options;
  const withSignal = signal ? { signal } : {};
  const remoteDir = posix.join(runDir, spec.results.path);
  const read = await resultManifest(ssh, remoteDir, spec, signal, options.onProgress);
  if (!('manifest' in read)) return read;
  const { manifest } = read;
  // Object storage holds no links: a link is named, never followed into a copy.
  const links = manifest.links ?? [];
  if (links.length > 0) return unverified({ refused: links.map((link) => `${link.path} -> ${link.target}: object storage holds no symlinks`) });

  const stored = await alreadyStored(target, manifest.files, signal);
  const toSend = manifest.files.filter((file) => !stored.has(file.path));
  const { direct: sendDirect } = options;
  // The pod's batches of PUTs report nothing until each ends; each is under its own timeout.
  const direct = toSend.length > 0 && sendDirect ? await withHeartbeat(options.onProgress, () => sendDirect(toSend)) : undefined;
  if (direct?.kind === 'failed') return unverified({ direct: [direct.message] });
  if (toSend.length > 0 && direct?.kind !== 'uploaded') {
    const refused = await streamAll(ssh, remoteDir, toSend, target, options);
    if (refused.missing.length > 0 || refused.different.length > 0) return unverified(refused);
  }

  const verdict = await verifyObjects(target, manifest.files, signal);
  const listed = new Set(manifest.files.map((file) => file.path));
  const late = (await withHeartbeat(options.onProgress, () => listRemoteFiles(ssh, remoteDir, { timeoutMs: listingTimeoutMs(spec), ...withSignal })))
    .filter((file) => !listed.has(file));
  const problems = { missing: verdict.missing, different: verdict.different, extra: [...new Set([...verdict.extra, ...late])].sort() };
  if (problems.missing.length + problems.different.length + problems.extra.length > 0) return unverified(problems);

  await putJobLog(ssh, stateDir, target, signal);
  const sentNow: ResultsPath = direct?.kind === 'uploaded' ? 'direct' : 'controller';
  const path = carriedBy([...stored.values(), ...toSend.map(() => sentNow)]);
  await writeSums(target, manifest.files, path, signal);
  const marked = await execChecked(ssh, markRetrievedCommand({ stateDir }), 'marking the results retrieved', commandTimeout);
  parseAck(marked.stdout.toString('utf8'), RETRIEVED_TAG);
  return { kind: 'verified', files: manifest.files.length, bytes: manifest.files.reduce((sum, file) => sum + file.size, 0), location: s3Uri(target), verifiedAt: new Date(), path };
}

/** Streams every file (a few at once); refusals are collected, a transport failure throws. */
async function streamAll(ssh: SshConnection, remoteDir: string, files: readonly ManifestFile[], target: S3Target, options: S3RetrieveOptions): Promise<{ missing: string[]; different: string[] }> {
  const refused = { missing: [] as string[], different: [] as string[] };
  const sftp = await SftpSession.open(ssh);
  try {
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < files.length) {
        options.signal?.throwIfAborted();
        const file = files[next++] as ManifestFile;
        try {
          await streamFileToS3(sftp, posix.join(remoteDir, file.path), file, target, resultKey(target, file.path), {
            signal: options.signal, onProgress: options.onProgress,
          });
        } catch (error) {
          if (!(error instanceof FileRefusedError)) throw error;
          refused[error.kind].push(file.path);
        }
      }
    };
    const results = await Promise.allSettled(Array.from({ length: Math.min(STREAMS, files.length) }, worker));
    const failure = results.find((result) => result.status === 'rejected');
    if (failure) throw failure.reason;
  } finally {
    sftp.end();
  }
  return { missing: refused.missing.sort(), different: refused.different.sort() };
}

/** job.log up to its size when described (job-log.ts), checked like a result file; absent: none written. */
async function putJobLog(ssh: SshConnection, stateDir: string, target: S3Target, signal: AbortSignal | undefined): Promise<void> {
  const log = await describeJobLog(ssh, stateDir, signal);
  if (!log) return;
  const sftp = await SftpSession.open(ssh);
  try {
    await streamFileToS3(sftp, log.remotePath, log.file, target, `${target.keyPrefix}job.log`, { signal, growing: true });
  } catch (error) {
    // The results are what counts: a log the job rewrote (not appended to) is not a reason to lose them.
    if (!(error instanceof FileRefusedError)) throw error;
  } finally {
    sftp.end();
  }
}

/**
 * The path that carried the results: direct only when the pod sent every file, in this try or an earlier
 * one whose verification failed (a store may answer an object's old state for a moment after its upload).
 */
export function carriedBy(paths: readonly (ResultsPath | undefined)[]): ResultsPath {
  return paths.length > 0 && paths.every((path) => path === 'direct') ? 'direct' : 'controller';
}

function unverified(problems: Record<string, readonly string[]>): RetrievalOutcome {
  const message = Object.entries(problems).filter(([, files]) => files.length > 0)
    .map(([what, files]) => `${files.length} ${what === 'refused' ? 'refused symlinks' : what === 'direct' ? 'refused by the store' : what} (${files.slice(0, 3).join(', ')})`).join(', ');
  return { kind: 'unverified', message };
}
