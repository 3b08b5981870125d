// The pod describes its results directory as a SHA-256 manifest; the controller trusts nothing
// else about it. The manifest comes from a pod we do not control, so every path in it is checked
// before it can name a local file: relative, no "." or ".." components, no duplicates.
//
// Wire format (the command's stdout): one record per regular file or symlink, NUL-terminated, so
// any file name (spaces, newlines, leading dashes) survives:
//     <sha256: 64 lowercase hex> SP <size: decimal bytes> SP <path relative to the dir> NUL
//     link SP <target, base64> SP <path relative to the dir> NUL
// An empty directory yields empty output. A symlink is a file of the result set: it is recorded
// (never followed) and stored as a link when its target stays inside the result set, else refused
// by name (retrieve.ts). Devices, sockets and FIFOs are not listed here, but the re-listing after
// the download names them (as extra), so nothing under the directory goes unreported.
// Directories are implied by the paths.
import { posix } from 'node:path';
import { z } from 'zod';
import type { SshConnection } from './connect.ts';
import { RemoteCommandError, execChecked } from './exec.ts';
import { shellQuote } from './shell.ts';
import { printable } from './text.ts';

export interface ManifestFile {
  /** Relative, '/'-separated, validated by safeManifestPath. */
  path: string;
  size: number;
  sha256: string;
}

export interface ManifestLink {
  /** Relative, '/'-separated, validated by safeManifestPath. */
  path: string;
  /** What the link says, byte for byte (as UTF-8); never followed. */
  target: string;
}

export interface Manifest {
  files: ManifestFile[];
  /** Symlinks of the result set (absent: none). */
  links?: ManifestLink[];
}

export class ManifestError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ManifestError';
  }
}

/** Exit status of manifestCommand when the directory does not exist (or cannot be entered). */
export const MANIFEST_NO_DIR_EXIT = 3;
/** Exit status of manifestCommand when the pod lacks sha256sum (or readlink, with symlinks to record). */
export const MANIFEST_NO_TOOL_EXIT = 4;
/** Exit status of manifestCommand when the directory itself is a symlink (it would be followed). */
const MANIFEST_DIR_IS_LINK_EXIT = 5;

/**
 * POSIX sh (dash, bash, busybox); any unreadable file or directory fails the command. The files of
 * each of find's batches are hashed and measured by one sha256sum and one wc (two processes per
 * batch, not per file: 10 000 small files took 85 s one by one), and each answer line must name
 * its file, so a file that failed cannot shift another's hash onto it. A path sha256sum would
 * escape (a backslash, a newline, a carriage return) is hashed through its stdin instead, alone.
 */
export function manifestCommand(dir: string): string {
  const oneByOne = 'for f do h=$(sha256sum < "$f") || exit 1; s=$(wc -c < "$f") || exit 1; printf "%s %s %s\\0" "${h%% *}" $s "${f#./}"; done';
  const batch = [
    's=$(wc -c -- "$@") || exit 1',
    // wc: "<size> <name>" (leading blanks), then a total; sha256sum: "<hex>  <name>" (or " *<name>").
    'sha256sum -- "$@" | { for f do',
    '  IFS= read -r h || exit 1; IFS= read -r w <&3 || exit 1; w=${w#"${w%%[! ]*}"}',
    '  [ "${w#* }" = "$f" ] && { [ "${h#*  }" = "$f" ] || [ "${h#* [*]}" = "$f" ]; } || exit 1',
    '  printf "%s %s %s\\0" "${h%% *}" "${w%% *}" "${f#./}"',
    'done; } 3<<EOF',
    '$s',
    'EOF',
  ].join('\n');
  const escaped = '\\( -path \'*\\\\*\' -o -path "*$nl*" -o -path "*$cr*" \\)';
  // The x keeps a target's trailing newlines from $(...); base64 keeps any byte off the wire format.
  const perLink = 'for f do t=$(readlink -- "$f" && echo x) || exit 1; t=${t%?}; t=${t%?}; '
    + 'b=$(printf "%s" "$t" | base64 | tr -d "\\n") || exit 1; printf "link %s %s\\0" "$b" "${f#./}"; done';
  return [
    `[ -L ${shellQuote(dir)} ] && { echo 'the results directory is a symlink' >&2; exit ${MANIFEST_DIR_IS_LINK_EXIT}; }`,
    `cd -- ${shellQuote(dir)} || exit ${MANIFEST_NO_DIR_EXIT}`,
    `command -v sha256sum >/dev/null 2>&1 || { echo 'sha256sum not found' >&2; exit ${MANIFEST_NO_TOOL_EXIT}; }`,
    "nl='\n'; cr=$(printf '\\r')",
    `find . -type f ${escaped} -exec sh -c ${shellQuote(oneByOne)} sh {} + || exit 1`,
    `find . -type f ! ${escaped} -exec sh -c ${shellQuote(batch)} sh {} + || exit 1`,
    `if find . -type l | grep -q .; then command -v readlink >/dev/null 2>&1 || { echo 'readlink not found' >&2; exit ${MANIFEST_NO_TOOL_EXIT}; }; fi`,
    `find . -type l -exec sh -c ${shellQuote(perLink)} sh {} +`,
  ].join('\n');
}

/** Lists every non-directory entry under `dir` (files, symlinks, anything else; relative paths, NUL-terminated). */
export function listFilesCommand(dir: string): string {
  return `cd -- ${shellQuote(dir)} || exit ${MANIFEST_NO_DIR_EXIT}\nfind . ! -type d -print0`;
}

export interface ComputeManifestOptions {
  /** Hashing a large results directory takes time on the pod; size this to the data. */
  timeoutMs: number;
  /** Cap on the manifest's size (about 100 bytes per file). Default 64 MiB. */
  maxBytes?: number;
  signal?: AbortSignal;
}

const DEFAULT_MAX_MANIFEST_BYTES = 64 * 1024 * 1024;

/** Runs manifestCommand on the pod and parses its answer. */
export async function computeManifest(conn: SshConnection, dir: string, options: ComputeManifestOptions): Promise<Manifest> {
  const output = await runListing(conn, manifestCommand(dir), dir, 'computing the results manifest', options);
  return parseManifest(output);
}

/** Every non-directory entry under `dir` on the pod, as validated relative paths. */
export async function listRemoteFiles(conn: SshConnection, dir: string, options: ComputeManifestOptions): Promise<string[]> {
  const output = await runListing(conn, listFilesCommand(dir), dir, 'listing the results directory', options);
  return splitRecords(output).map((record, index) => {
    const path = decodePath(record, index).replace(/^\.\//, '');
    const problem = manifestPathProblem(path);
    if (problem) throw new ManifestError(`listed file ${index + 1} (${printable(path)}): ${problem}`);
    return path;
  });
}

async function runListing(conn: SshConnection, command: string, dir: string, what: string, options: ComputeManifestOptions): Promise<Buffer> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_MANIFEST_BYTES;
  try {
    const result = await execChecked(conn, command, what, {
      timeoutMs: options.timeoutMs,
      maxOutputBytes: maxBytes,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    // A cut listing would read as a complete one with fewer files: never parse it.
    if (result.stdoutTruncated) throw new ManifestError(`${what}: output exceeds ${maxBytes} bytes`);
    return result.stdout;
  } catch (err) {
    if (err instanceof RemoteCommandError) {
      const { code } = err.result;
      if (code === MANIFEST_NO_DIR_EXIT) throw new ManifestError(`${what}: directory ${printable(dir)} does not exist on the pod`, { cause: err });
      if (code === MANIFEST_NO_TOOL_EXIT) throw new ManifestError(`${what}: the pod lacks a tool: ${printable(err.result.stderr.toString('utf8').trim())}`, { cause: err });
      if (code === MANIFEST_DIR_IS_LINK_EXIT) throw new ManifestError(`${what}: ${printable(dir)} is a symlink on the pod, not a directory: refused (it would be followed)`, { cause: err });
    }
    throw err;
  }
}

const recordSchema = z.object({
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'not a SHA-256 hex digest'),
  size: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  path: z.string().superRefine((path, ctx) => {
    const problem = manifestPathProblem(path);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
});

/** Parses and validates manifestCommand's output; throws ManifestError on anything off. */
export function parseManifest(output: Buffer): Manifest {
  const files: ManifestFile[] = [];
  const links: ManifestLink[] = [];
  for (const [index, record] of splitRecords(output).entries()) {
    const text = decodePath(record, index);
    const link = /^link ([A-Za-z0-9+/]*={0,2}) ([\s\S]*)$/.exec(text);
    if (link) {
      links.push(parseLink({ target: decodePath(Buffer.from(link[1] ?? '', 'base64'), index), path: link[2] }, index));
      continue;
    }
    const match = /^(\S+) (\d+) ([\s\S]*)$/.exec(text);
    if (!match) throw new ManifestError(`manifest record ${index + 1} is malformed: ${printable(text)}`);
    files.push(parseRecord({ sha256: match[1], size: Number(match[2]), path: match[3] }, index));
  }
  return validateManifest(links.length > 0 ? { files, links } : { files });
}

/** Checks a manifest built elsewhere by the same rules parseManifest applies. */
export function validateManifest(manifest: Manifest): Manifest {
  const files = manifest.files.map((file, index) => parseRecord(file, index));
  const links = manifest.links?.map((link, index) => parseLink(link, files.length + index));
  const seen = new Set<string>();
  for (const file of [...files, ...links ?? []]) {
    if (seen.has(file.path)) throw new ManifestError(`manifest lists ${printable(file.path)} twice`);
    seen.add(file.path);
  }
  // "a" and "a/b" cannot both be files (nor a link and a file below it); a hostile manifest could still claim so.
  for (const file of [...files, ...links ?? []]) {
    const parts = file.path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const parent = parts.slice(0, i).join('/');
      if (seen.has(parent)) throw new ManifestError(`manifest lists ${printable(parent)} both as a file and as a directory`);
    }
  }
  return links ? { files, links } : { files };
}

const linkSchema = z.object({
  path: recordSchema.shape.path,
  target: z.string().min(1, 'empty link target').refine((target) => !target.includes('\0'), 'NUL in link target'),
});

function parseLink(record: unknown, index: number): ManifestLink {
  const parsed = linkSchema.safeParse(record);
  if (!parsed.success) {
    const path = (record as { path?: unknown } | null)?.path;
    const where = typeof path === 'string' ? ` (${printable(path)})` : '';
    throw new ManifestError(`manifest record ${index + 1}${where}: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`);
  }
  return parsed.data;
}

/**
 * Why a link may not be stored as it is, or undefined when it may: its target must be relative and
 * stay inside the result set, so the stored copy never points at the controller's own files.
 */
export function linkTargetProblem(link: ManifestLink): string | undefined {
  if (link.target.startsWith('/')) return 'points to an absolute path';
  const resolved = posix.normalize(posix.join(posix.dirname(link.path), link.target));
  if (resolved === '..' || resolved.startsWith('../')) return 'points outside the results directory';
  return undefined;
}

function parseRecord(record: unknown, index: number): ManifestFile {
  const parsed = recordSchema.safeParse(record);
  if (!parsed.success) {
    const path = (record as { path?: unknown } | null)?.path;
    const where = typeof path === 'string' ? ` (${printable(path)})` : '';
    throw new ManifestError(`manifest record ${index + 1}${where}: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`);
  }
  return parsed.data;
}

/** Why `path` may not name a file under a results directory, or undefined when it may. */
export function manifestPathProblem(path: string): string | undefined {
  if (path === '') return 'empty path';
  if (path.startsWith('/')) return 'absolute path';
  if (path.includes('\0')) return 'NUL in path';
  if (Buffer.byteLength(path) > 4096) return 'path longer than 4096 bytes';
  for (const part of path.split('/')) {
    if (part === '..') return 'path leaves the directory (..)';
    if (part === '' || part === '.') return 'path is not in canonical form';
  }
  return undefined;
}

function splitRecords(output: Buffer): Buffer[] {
  if (output.length === 0) return [];
  if (output[output.length - 1] !== 0) throw new ManifestError('listing does not end with a NUL: it was cut short');
  const records: Buffer[] = [];
  let start = 0;
  for (let end = output.indexOf(0, start); end !== -1; end = output.indexOf(0, start)) {
    records.push(output.subarray(start, end));
    start = end + 1;
  }
  return records;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

// SFTP paths travel as UTF-8 strings here, so a name that is not valid UTF-8 could not be fetched
// by its real name: refuse it rather than fetch a different file.
function decodePath(record: Buffer, index: number): string {
  try {
    return utf8.decode(record);
  } catch {
    throw new ManifestError(`record ${index + 1} is not valid UTF-8: ${printable(record.toString('latin1'))}`);
  }
}
