// File transfer over SFTP with two guarantees: a reader on the pod never sees a half-written
// upload (temp name + POSIX rename), and a download never holds a file in memory and never
// appears under its final local name unless complete (and matching, when a hash is expected).
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { posix } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { SshConnection } from './connect.ts';
import { SshError, abortError } from './errors.ts';
import { SftpSession } from './sftp.ts';

// Reads in flight per file: 16 x 128 KiB = 2 MiB, which is ssh2's channel window (more in flight
// would only queue) and keeps a download's memory bounded. 128 KiB stays under OpenSSH's read
// limit (256 KiB - 1 KiB), so no read is split; on loopback it measured faster than 64 KiB.
const READ_CHUNK = 128 * 1024;
const READ_WINDOW = 16;
const WRITE_CHUNK = 64 * 1024;

export interface DownloadOptions {
  /** Lowercase hex SHA-256 the content must have; on a mismatch nothing is left at localPath. */
  expectedSha256?: string;
  /** Size the content must have; reading stops one byte past it, so a growing or endless file is bounded. */
  expectedSize?: number;
  /**
   * The file may still be appended to (a log a job's background process writes): its content is its
   * first expectedSize bytes, and reading stops there instead of one byte past.
   */
  growing?: boolean;
  /** Called after each chunk is written, with the bytes written so far. */
  onProgress?: (bytes: number) => void;
  signal?: AbortSignal;
  /** Reuse an open SFTP session (one is opened and closed otherwise). */
  sftp?: SftpSession;
  /**
   * Keep what an interrupted try fetched (`.<name>.part` beside localPath) and fetch only the rest,
   * so a transfer longer than any one try still ends. The whole content is checked as without it.
   */
  resume?: boolean;
}

export interface DownloadResult {
  bytes: number;
  sha256: string;
}

/** The downloaded content is not what was expected; the partial file has been removed. */
export class ContentMismatchError extends Error {
  readonly remotePath: string;
  readonly bytes: number;
  readonly sha256: string;
  /** Bytes of the content that an earlier, interrupted try had kept. */
  readonly resumedFrom: number;

  constructor(remotePath: string, detail: string, bytes: number, sha256: string, resumedFrom = 0) {
    super(`${remotePath}: ${detail}`);
    this.name = 'ContentMismatchError';
    this.remotePath = remotePath;
    this.bytes = bytes;
    this.sha256 = sha256;
    this.resumedFrom = resumedFrom;
  }
}

/**
 * Writes `contents` to `remotePath` atomically: parents are created (mkdir -p), the data goes to
 * `<path>.tmp-<random>`, gets exactly `mode` (not the pod's umask) and is renamed over the target.
 * Default mode 0600: uploads may carry configuration a job treats as private.
 */
export async function uploadFile(conn: SshConnection, remotePath: string, contents: Buffer | string, mode = 0o600): Promise<void> {
  const data = typeof contents === 'string' ? Buffer.from(contents, 'utf8') : contents;
  const sftp = await SftpSession.open(conn);
  try {
    await mkdirRemote(sftp, posix.dirname(remotePath));
    const temp = `${remotePath}.tmp-${randomBytes(6).toString('hex')}`;
    const handle = await sftp.open(temp, 'wx', mode);
    let renamed = false;
    try {
      try {
        for (let offset = 0; offset < data.length; offset += WRITE_CHUNK) {
          await sftp.write(handle, data.subarray(offset, offset + WRITE_CHUNK), offset, temp);
        }
        await sftp.fchmod(handle, mode, temp);
        await sftp.fsync(handle, temp);
      } finally {
        await sftp.close(handle, temp);
      }
      await sftp.rename(temp, remotePath);
      renamed = true;
    } finally {
      if (!renamed) await sftp.unlink(temp).catch(() => undefined);
    }
  } finally {
    sftp.end();
  }
}

/** mkdir -p over SFTP; a directory that appears concurrently is fine. */
export async function mkdirRemote(sftp: SftpSession, dir: string, mode = 0o755): Promise<void> {
  const absolute = dir.startsWith('/');
  const parts = dir.split('/').filter((part) => part !== '' && part !== '.');
  let path = absolute ? '' : '.';
  for (const part of parts) {
    path = `${path}/${part}`;
    const stats = await sftp.stat(path);
    if (stats?.isDirectory()) continue;
    if (stats) throw new SshError('protocol', `${path} exists and is not a directory`);
    try {
      await sftp.mkdir(path, mode);
    } catch (err) {
      if (!(await sftp.stat(path))?.isDirectory()) throw err;
    }
  }
}

/**
 * Streams `remotePath` into `localPath`, hashing as it writes. Memory stays bounded by
 * READ_WINDOW x READ_CHUNK whatever the file size. The data goes to a temp file next to
 * `localPath` that is renamed into place only when complete and (if given) matching.
 */
export async function downloadFile(conn: SshConnection, remotePath: string, localPath: string, options: DownloadOptions = {}): Promise<DownloadResult> {
  const { signal } = options;
  if (signal?.aborted) throw abortError(signal);
  const sftp = options.sftp ?? (await SftpSession.open(conn));
  try {
    await mkdir(dirname(localPath), { recursive: true });
    if (!options.resume) return await downloadTo(sftp, remotePath, localPath, `.${basename(localPath)}.part-${randomBytes(6).toString('hex')}`, options);
    try {
      return await downloadTo(sftp, remotePath, localPath, resumeName(localPath), options);
    } catch (err) {
      // What an earlier try kept may not be the start of this content (the pod changed the file):
      // once more from the first byte, so a stale partial costs a download, never a verdict.
      if (!(err instanceof ContentMismatchError && err.resumedFrom > 0)) throw err;
      return await downloadTo(sftp, remotePath, localPath, resumeName(localPath), options);
    }
  } finally {
    if (!options.sftp) sftp.end();
  }
}

/** The partial file a resumable download of `localPath` keeps between tries. */
const resumeName = (localPath: string): string => `.${basename(localPath)}.part`;

/** Hashes the bytes an interrupted try kept in `path`; one longer than `limit` allows is dropped. */
async function keptPrefix(path: string, limit: number): Promise<{ bytes: number; hash: Hash }> {
  const hash = createHash('sha256');
  const size = await stat(path).then((stats) => stats.size, (err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return 0;
    throw err;
  });
  if (size === 0 || size >= limit) {
    await rm(path, { force: true });
    return { bytes: 0, hash };
  }
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return { bytes: size, hash };
}

async function downloadTo(sftp: SftpSession, remotePath: string, localPath: string, tempName: string, options: DownloadOptions): Promise<DownloadResult> {
  const { signal } = options;
  const temp = join(dirname(localPath), tempName);
  const limit = options.expectedSize === undefined ? Infinity : options.expectedSize + (options.growing ? 0 : 1);
  // A resumed try appends to what the last one kept; the whole content is still hashed and checked.
  const kept = options.resume ? await keptPrefix(temp, limit) : { bytes: 0, hash: createHash('sha256') };
  const { hash } = kept;
  let bytes = kept.bytes;
  let keepTemp = false;
  try {
    const handle = await sftp.open(remotePath, 'r');
    try {
      await pipeline(
        readPipelined(sftp, handle, remotePath, limit, signal, kept.bytes),
        async function* (chunks: AsyncIterable<Buffer>) {
          for await (const chunk of chunks) {
            hash.update(chunk);
            bytes += chunk.length;
            yield chunk;
            options.onProgress?.(bytes);
          }
        },
        createWriteStream(temp, { flags: options.resume ? 'a' : 'wx', flush: true }),
        signal ? { signal } : {},
      );
    } finally {
      // After an abort the close is sent but not waited for: over a slow link its answer comes
      // only after the data of the reads still in flight, and nothing here needs it.
      const closed = sftp.close(handle, remotePath).catch(() => undefined);
      if (!signal?.aborted) await closed;
    }
    const sha256 = hash.digest('hex');
    if (options.expectedSize !== undefined && bytes !== options.expectedSize) {
      const size = bytes > options.expectedSize ? 'is larger than' : `is ${bytes} bytes, not`;
      throw new ContentMismatchError(remotePath, `${size} the expected ${options.expectedSize} bytes`, bytes, sha256, kept.bytes);
    }
    if (options.expectedSha256 !== undefined && sha256 !== options.expectedSha256.toLowerCase()) {
      throw new ContentMismatchError(remotePath, `SHA-256 ${sha256} differs from the expected ${options.expectedSha256}`, bytes, sha256, kept.bytes);
    }
    await rename(temp, localPath);
    keepTemp = true;
    return { bytes, sha256 };
  } catch (err) {
    // An interrupted resumable try keeps its bytes for the next; a mismatch keeps nothing.
    if (options.resume && !(err instanceof ContentMismatchError)) keepTemp = true;
    if (signal?.aborted) throw abortError(signal);
    throw err;
  } finally {
    if (!keepTemp) await rm(temp, { force: true });
  }
}

/**
 * Yields the file's bytes in order while keeping up to READ_WINDOW reads in flight, so a link's
 * round trip does not cap throughput at one chunk per RTT. Starts at byte `start`; stops at end of file or at byte `limit`,
 * and at once when `signal` aborts: a read still in flight is not waited for, since over a slow
 * link the window's data could take minutes to arrive (the handle's close is queued behind those
 * reads on the server, which answers a handle's requests in order).
 */
export async function* readPipelined(sftp: SftpSession, handle: Buffer, path: string, limit: number, signal?: AbortSignal, start = 0): AsyncGenerator<Buffer> {
  const inFlight: { length: number; data: Promise<Buffer> }[] = [];
  let next = start;
  let eof = false;
  const fill = (): void => {
    while (!eof && inFlight.length < READ_WINDOW && next < limit) {
      const length = Math.min(READ_CHUNK, limit - next);
      const data = readFully(sftp, handle, next, length, path);
      // Handled when awaited in order; this only keeps a failure behind an earlier one from
      // surfacing as an unhandled rejection.
      data.catch(() => undefined);
      inFlight.push({ length, data });
      next += length;
    }
  };
  try {
    fill();
    for (let request = inFlight.shift(); request; request = inFlight.shift()) {
      const chunk = await untilAborted(request.data, signal);
      if (chunk.length < request.length) eof = true;
      if (chunk.length > 0) yield chunk;
      if (eof) break;
      fill();
    }
  } finally {
    // Reads still in flight must finish before the handle is closed under them, unless aborted.
    if (!signal?.aborted) await Promise.allSettled(inFlight.map((request) => request.data));
  }
}

/** `promise`, or a rejection with the abort error as soon as `signal` aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** One chunk; a server may answer a read with fewer bytes than asked without being at the end. */
async function readFully(sftp: SftpSession, handle: Buffer, position: number, length: number, path: string): Promise<Buffer> {
  const first = await sftp.read(handle, position, length, path);
  if (first.length === length || first.length === 0) return first;
  const parts = [first];
  let got = first.length;
  while (got < length) {
    const more = await sftp.read(handle, position + got, length - got, path);
    if (more.length === 0) break;
    parts.push(more);
    got += more.length;
  }
  return Buffer.concat(parts, got);
}
