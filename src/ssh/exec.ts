// One remote command per call: bounded output, a hard timeout and the exit status. The command
// is one string for the remote login shell; build it with shellQuote/shellJoin.
//
// A timeout (or abort) closes the channel; it cannot kill the remote command. OpenSSH refuses
// "signal" requests in root sessions (our pods log in as root) and, without a pty, nothing hangs
// the command up: it runs on until it next writes to its closed output (SIGPIPE) or ends. A
// command that must not outlive its bound should carry one on the pod (e.g. `timeout`).
import type { ClientChannel } from 'ssh2';
import type { SshConnection } from './connect.ts';
import { SshError, abortError } from './errors.ts';
import { printable } from './text.ts';

export interface ExecOptions {
  timeoutMs: number;
  /** Cap on the bytes kept from each of stdout and stderr (the rest is read and dropped). Default 1 MiB. */
  maxOutputBytes?: number;
  /** Written to the command's stdin, which is then closed (also closed at once when absent). */
  stdin?: string | Buffer;
  signal?: AbortSignal;
}

export interface ExecResult {
  /** Exit status, or null when the command died of a signal (then named in `signal`, e.g. "SIGTERM"). */
  code: number | null;
  signal: string | null;
  stdout: Buffer;
  stderr: Buffer;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
}

export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

/** A command that ran and reported a failure (non-zero exit or signal). */
export class RemoteCommandError extends Error {
  readonly result: ExecResult;

  constructor(what: string, result: ExecResult) {
    const status = result.code !== null ? `exit code ${result.code}` : `signal ${result.signal ?? 'unknown'}`;
    const stderr = printable(result.stderr.toString('utf8'));
    super(`${what} failed (${status})${stderr ? `: ${stderr}` : ''}`);
    this.name = 'RemoteCommandError';
    this.result = result;
  }
}

export function exec(conn: SshConnection, command: string, options: ExecOptions): Promise<ExecResult> {
  const max = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const { signal } = options;
  return new Promise<ExecResult>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError(signal));
      return;
    }
    if (conn.closed) {
      reject(conn.closedError('cannot run a command'));
      return;
    }
    let channel: ClientChannel | undefined;
    let settled = false;
    const stop = (err: SshError): void => {
      if (settled) return;
      settled = true;
      cleanup();
      channel?.close();
      reject(err);
    };
    const onAbort = (): void => {
      if (signal) stop(abortError(signal));
    };
    const timer = setTimeout(() => {
      stop(new SshError('timeout', `command timed out after ${options.timeoutMs} ms on ${conn.endpoint}`));
    }, options.timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    signal?.addEventListener('abort', onAbort, { once: true });

    try {
      conn.client.exec(command, (err, ch) => {
        if (err) {
          stop(conn.closed ? conn.closedError('cannot run a command') : new SshError('protocol', `cannot start a command on ${conn.endpoint}: ${err.message}`, { cause: err }));
          return;
        }
        channel = ch;
        if (settled) {
          ch.close();
          return;
        }
        const stdout = new BoundedBuffer(max);
        const stderr = new BoundedBuffer(max);
        let code: number | null = null;
        let exitSignal: string | null = null;
        let sawExit = false;
        let channelClosed = false;
        let stderrEnded = false;

        const finish = (): void => {
          if (!channelClosed || !stderrEnded || settled) return;
          settled = true;
          cleanup();
          if (!sawExit) {
            reject(conn.closed ? conn.closedError('command lost') : new SshError('closed', `command on ${conn.endpoint} ended without an exit status`));
            return;
          }
          resolve({
            code,
            signal: exitSignal,
            stdout: stdout.contents(),
            stderr: stderr.contents(),
            stdoutTruncated: stdout.truncated,
            stderrTruncated: stderr.truncated,
          });
        };

        ch.on('data', (chunk: Buffer) => stdout.add(chunk));
        ch.stderr.on('data', (chunk: Buffer) => stderr.add(chunk));
        ch.stderr.on('end', () => {
          stderrEnded = true;
          finish();
        });
        ch.on('exit', (exitCode: number | null, sig?: string) => {
          sawExit = true;
          code = exitCode;
          exitSignal = sig ?? null;
        });
        ch.on('close', () => {
          channelClosed = true;
          // stderr is pushed its end by ssh2 on close; if it has nothing buffered it ends now.
          if (ch.stderr.readableEnded) stderrEnded = true;
          finish();
        });
        ch.end(options.stdin);
      });
    } catch (err) {
      // ssh2 throws "Not connected" synchronously when the connection is already gone.
      stop(conn.closedError(`cannot run a command (${err instanceof Error ? err.message : String(err)})`));
    }
  });
}

/** exec that throws RemoteCommandError unless the command exited 0. */
export async function execChecked(conn: SshConnection, command: string, what: string, options: ExecOptions): Promise<ExecResult> {
  const result = await exec(conn, command, options);
  if (result.code !== 0) throw new RemoteCommandError(what, result);
  return result;
}

class BoundedBuffer {
  readonly #max: number;
  readonly #chunks: Buffer[] = [];
  #length = 0;
  truncated = false;

  constructor(max: number) {
    this.#max = max;
  }

  add(chunk: Buffer): void {
    const room = this.#max - this.#length;
    if (chunk.length > room) this.truncated = true;
    if (room <= 0) return;
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    // Copied, so a kept slice does not pin a larger receive buffer.
    this.#chunks.push(Buffer.from(kept));
    this.#length += kept.length;
  }

  contents(): Buffer {
    return Buffer.concat(this.#chunks, this.#length);
  }
}

