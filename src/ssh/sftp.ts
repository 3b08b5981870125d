// Promise wrappers over one ssh2 SFTP channel, with errors that say which operation on which path
// failed and whether the connection itself is gone.
import type { OpenMode, SFTPWrapper, Stats } from 'ssh2';
import type { SshConnection } from './connect.ts';
import { SshError } from './errors.ts';
import { printable } from './text.ts';

/** The SFTP status (draft-ietf-secsh-filexfer-02) callers act on. */
const SFTP_NO_SUCH_FILE = 2;

export class SftpError extends SshError {
  /** The SFTP status code, when the server sent one. */
  readonly status: number | undefined;
  readonly path: string;

  constructor(what: string, path: string, status: number | undefined, message: string, cause: unknown) {
    super('protocol', `${what} ${printable(path, 300)}: ${printable(message)}`, { cause });
    this.name = 'SftpError';
    this.status = status;
    this.path = path;
  }
}

export function isNoSuchFile(err: unknown): boolean {
  return err instanceof SftpError && err.status === SFTP_NO_SUCH_FILE;
}

type Callback<T> = (err: Error | undefined | null, value: T) => void;

export class SftpSession {
  readonly #sftp: SFTPWrapper;
  readonly #conn: SshConnection;
  /** Set once the channel is ended or closed (by either side, or with the connection). */
  #gone = false;
  /** Rejecters of the requests still waiting for an answer. */
  readonly #pending = new Set<(err: unknown) => void>();

  private constructor(sftp: SFTPWrapper, conn: SshConnection) {
    this.#sftp = sftp;
    this.#conn = conn;
    // ssh2 answers the requests outstanding when the channel closes, but a request made after
    // that is dropped without an answer (its callback never runs): a close() of a handle after
    // the connection was destroyed would wait forever. Once the channel is gone, every request
    // still waiting, and every new one, fails at once.
    const gone = (): void => this.#markGone();
    sftp.once('end', gone);
    sftp.once('close', gone);
  }

  static open(conn: SshConnection): Promise<SftpSession> {
    return new Promise((resolve, reject) => {
      if (conn.closed) {
        reject(conn.closedError('cannot open SFTP'));
        return;
      }
      try {
        conn.client.sftp((err, sftp) => {
          if (err) reject(conn.closed ? conn.closedError('cannot open SFTP') : new SshError('protocol', `cannot open SFTP on ${conn.endpoint}: ${err.message}`, { cause: err }));
          else resolve(new SftpSession(sftp, conn));
        });
      } catch (err) {
        reject(conn.closedError(`cannot open SFTP (${err instanceof Error ? err.message : String(err)})`));
      }
    });
  }

  /** Opens with fopen-style flags ('r', 'wx', ...); `mode` applies when the file is created. */
  open(path: string, flags: OpenMode, mode?: number): Promise<Buffer> {
    return this.#call('open', path, (cb: Callback<Buffer>) => {
      if (mode === undefined) this.#sftp.open(path, flags, cb);
      else this.#sftp.open(path, flags, { mode }, cb);
    });
  }

  /** Reads up to `length` bytes at `position` into a new buffer; a short or empty buffer means end of file. */
  async read(handle: Buffer, position: number, length: number, path: string): Promise<Buffer> {
    const buf = Buffer.allocUnsafe(length);
    const n = await this.#call('read', path, (cb: Callback<number>) => {
      this.#sftp.read(handle, buf, 0, length, position, (err, bytesRead) => cb(err, bytesRead));
    });
    return n === length ? buf : buf.subarray(0, n);
  }

  write(handle: Buffer, data: Buffer, position: number, path: string): Promise<void> {
    return this.#call('write', path, (cb: Callback<void>) => {
      this.#sftp.write(handle, data, 0, data.length, position, (err) => cb(err, undefined));
    });
  }

  fchmod(handle: Buffer, mode: number, path: string): Promise<void> {
    return this.#call('chmod', path, (cb: Callback<void>) => this.#sftp.fchmod(handle, mode, (err) => cb(err, undefined)));
  }

  /** Flushes to the pod's disk where the server supports fsync@openssh.com; a no-op elsewhere. */
  async fsync(handle: Buffer, path: string): Promise<void> {
    try {
      await this.#call('fsync', path, (cb: Callback<void>) => this.#sftp.ext_openssh_fsync(handle, (err) => cb(err, undefined)));
    } catch (err) {
      if (err instanceof SftpError && /not support/i.test(err.message)) return;
      throw err;
    }
  }

  close(handle: Buffer, path: string): Promise<void> {
    return this.#call('close', path, (cb: Callback<void>) => this.#sftp.close(handle, (err) => cb(err, undefined)));
  }

  /** stat that follows symlinks; undefined when nothing is at the path. */
  async stat(path: string): Promise<Stats | undefined> {
    try {
      return await this.#call('stat', path, (cb: Callback<Stats>) => this.#sftp.stat(path, cb));
    } catch (err) {
      if (isNoSuchFile(err)) return undefined;
      throw err;
    }
  }

  mkdir(path: string, mode: number): Promise<void> {
    return this.#call('mkdir', path, (cb: Callback<void>) => this.#sftp.mkdir(path, { mode }, (err) => cb(err, undefined)));
  }

  /** POSIX rename (replaces the target atomically), via posix-rename@openssh.com. */
  rename(from: string, to: string): Promise<void> {
    return this.#call('rename', `${from} -> ${to}`, (cb: Callback<void>) => this.#sftp.ext_openssh_rename(from, to, (err) => cb(err, undefined)));
  }

  unlink(path: string): Promise<void> {
    return this.#call('unlink', path, (cb: Callback<void>) => this.#sftp.unlink(path, (err) => cb(err, undefined)));
  }

  end(): void {
    this.#sftp.end();
    this.#markGone();
  }

  #markGone(): void {
    this.#gone = true;
    const pending = [...this.#pending];
    this.#pending.clear();
    for (const fail of pending) fail(new Error('the SFTP channel is closed'));
  }

  #call<T>(what: string, path: string, start: (cb: Callback<T>) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const onError = (err: unknown): void => {
        if (settled) return;
        settled = true;
        this.#pending.delete(onError);
        if (this.#conn.closed) {
          reject(this.#conn.closedError(`SFTP ${what} ${printable(path, 300)}`));
          return;
        }
        const message = err instanceof Error ? err.message : String(err);
        const code = (err as { code?: unknown } | undefined)?.code;
        reject(new SftpError(what, path, typeof code === 'number' ? code : undefined, message, err));
      };
      if (this.#gone || this.#conn.closed) {
        onError(new Error('the SFTP channel is closed'));
        return;
      }
      this.#pending.add(onError);
      try {
        start((err, value) => {
          if (err) onError(err);
          else if (!settled) {
            settled = true;
            this.#pending.delete(onError);
            resolve(value);
          }
        });
      } catch (err) {
        // ssh2 throws synchronously when the channel is gone or an extension is missing.
        onError(err);
      }
    });
  }
}
