// An SSH session to a pod that is trusted only if it presents exactly the host key this run
// generated and pinned: never trust-on-first-use, never the image's own keys, no agent, no
// password, no keyboard-interactive. The failure kinds let a caller tell "not up yet" from
// "not the pod we made".
import { Client, type ClientErrorExtensions, type ConnectConfig } from 'ssh2';
import { HostKeyMismatchError, SshAuthError, SshError, abortError } from './errors.ts';
import { fingerprint, parsePublicKey, protectPrivateKey } from './keys.ts';

export interface ConnectOptions {
  host: string;
  port: number;
  username: string;
  /** The run's client private key (OpenSSH format). */
  privateKey: string;
  /** The pinned host public key line ("ssh-ed25519 AAAA..."). */
  hostPublicKey: string;
  /** Bound on TCP connect + key exchange + authentication. */
  readyTimeoutMs: number;
  signal?: AbortSignal;
  /** SSH-level keepalive; a connection that misses 3 in a row is closed. Default 15 s; 0 disables. */
  keepaliveIntervalMs?: number;
}

export class SshConnection {
  readonly client: Client;
  readonly endpoint: string;
  readonly hostKeyFingerprint: string;
  #closed = false;
  #lastError: Error | undefined;

  constructor(client: Client, endpoint: string, hostKeyFingerprint: string) {
    this.client = client;
    this.endpoint = endpoint;
    this.hostKeyFingerprint = hostKeyFingerprint;
    // ssh2 emits 'error' after the session is up (keepalive timeout, reset); without a listener
    // that would crash the process. Operations in flight see the close through their channels.
    client.on('error', (err) => {
      this.#lastError = err;
    });
    client.on('close', () => {
      this.#closed = true;
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** An SshError describing why the connection is unusable ("closed" with the last error as cause). */
  closedError(what: string): SshError {
    const why = this.#lastError ? `: ${this.#lastError.message}` : '';
    return new SshError('closed', `${what}: the SSH connection to ${this.endpoint} is closed${why}`, { cause: this.#lastError });
  }

  close(): void {
    this.#closed = true;
    this.client.end();
  }

  /**
   * Closes at once, without waiting for the other side to answer the disconnect: what runs over the
   * connection fails now, even over a slow or stalled link (an aborted transfer).
   */
  destroy(): void {
    this.#closed = true;
    this.client.destroy();
  }
}

export async function connectPinned(options: ConnectOptions): Promise<SshConnection> {
  const pinned = parsePublicKey(options.hostPublicKey);
  if (pinned.type !== 'ssh-ed25519') throw new TypeError(`pinned host key must be ssh-ed25519, not ${pinned.type}`);
  const pinnedFingerprint = fingerprint(pinned.blob);
  const endpoint = `${options.host}:${options.port}`;
  protectPrivateKey(options.privateKey);
  const { signal } = options;

  return new Promise<SshConnection>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError(signal));
      return;
    }
    const client = new Client();
    let presented: Buffer | undefined;
    let settled = false;

    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      return true;
    };
    const fail = (err: SshError): void => {
      if (!settle()) return;
      client.destroy();
      reject(err);
    };
    const onAbort = (): void => {
      if (signal) fail(abortError(signal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });

    client.on('error', (err: Error & ClientErrorExtensions) => {
      fail(classify(err, endpoint, pinned.blob, pinnedFingerprint, presented));
    });
    client.on('close', () => {
      fail(new SshError('closed', `SSH connection to ${endpoint} closed before the session was ready`));
    });
    client.on('ready', () => {
      if (!settle()) return;
      resolve(new SshConnection(client, endpoint, pinnedFingerprint));
    });

    const config: ConnectConfig = {
      host: options.host,
      port: options.port,
      username: options.username,
      privateKey: options.privateKey,
      readyTimeout: options.readyTimeoutMs,
      keepaliveInterval: options.keepaliveIntervalMs ?? 15_000,
      keepaliveCountMax: 3,
      tryKeyboard: false,
      authHandler: ['publickey'],
      // Only the pinned key's type is negotiated, so a server holding several host keys must show
      // the one we can compare; one without it fails the handshake (a mismatch, see classify).
      algorithms: { serverHostKey: ['ssh-ed25519'] },
      // ssh2 checks the server's signature with this key after we accept it, so equality of the
      // blob plus that signature proves the server holds the pinned private key.
      hostVerifier: (key: Buffer): boolean => {
        presented = Buffer.from(key);
        return key.equals(pinned.blob);
      },
    };
    try {
      client.connect(config);
      // Every SFTP request is a small write awaiting its answer: with Nagle's algorithm each one
      // waits out the peer's delayed ACK (~40 ms on Linux).
      client.setNoDelay(true);
    } catch (err) {
      // ssh2 throws synchronously on a private key it cannot parse.
      const message = err instanceof Error ? err.message : String(err);
      fail(new SshError('protocol', `cannot connect to ${endpoint}: ${message}`, { cause: err }));
    }
  });
}

function classify(
  err: Error & ClientErrorExtensions & { code?: unknown },
  endpoint: string,
  pinnedBlob: Buffer,
  pinnedFingerprint: string,
  presented: Buffer | undefined,
): SshError {
  if (presented && !presented.equals(pinnedBlob)) {
    return new HostKeyMismatchError(pinnedFingerprint, fingerprint(presented), endpoint);
  }
  if (/no matching host key format/i.test(err.message)) {
    return new HostKeyMismatchError(pinnedFingerprint, undefined, endpoint);
  }
  const detail = `SSH to ${endpoint}: ${err.message}`;
  const options = { cause: err };
  switch (err.level) {
    case 'client-authentication':
      return new SshAuthError(`${detail} (the pod does not accept this run's client key)`, options);
    case 'client-timeout':
      return new SshError('timeout', detail, options);
    case 'client-dns':
      return new SshError('unreachable', detail, options);
    case 'client-socket':
      switch (err.code) {
        case 'ECONNREFUSED':
          return new SshError('refused', detail, options);
        case 'ECONNRESET':
        case 'EPIPE':
          return new SshError('closed', detail, options);
        case 'ETIMEDOUT':
          return new SshError('timeout', detail, options);
        default:
          return new SshError('unreachable', detail, options);
      }
  }
  if (/connection lost before handshake/i.test(err.message)) return new SshError('closed', detail, options);
  return new SshError('protocol', detail, options);
}
