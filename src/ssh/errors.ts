// Every SSH failure carries a kind, because the caller's decision depends on it: a pod whose sshd
// is not up yet is waited for, a pod that presents another host key is never trusted, and a
// rejected client key means the pod was not set up with this run's key.

export type SshFailureKind =
  | 'refused' // TCP connection refused: nothing listens (yet)
  | 'unreachable' // no route, DNS failure
  | 'timeout' // no authenticated session within the ready timeout, or a command ran too long
  | 'closed' // the connection closed or was reset (before the session was ready, or under an operation)
  | 'host-key-mismatch' // the server is not the pod we pinned: never trusted
  | 'auth-rejected' // the server refused this run's client key
  | 'aborted' // the caller's AbortSignal fired
  | 'protocol'; // anything else the SSH or SFTP layer reported

export class SshError extends Error {
  readonly kind: SshFailureKind;

  constructor(kind: SshFailureKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SshError';
    this.kind = kind;
  }
}

export class HostKeyMismatchError extends SshError {
  /** SHA256 fingerprint of the pinned host key. */
  readonly expectedFingerprint: string;
  /** SHA256 fingerprint of the key the server presented; undefined when it offered none of the pinned type. */
  readonly presentedFingerprint: string | undefined;

  constructor(expectedFingerprint: string, presentedFingerprint: string | undefined, endpoint: string) {
    const presented = presentedFingerprint ?? 'no key of the pinned type';
    super(
      'host-key-mismatch',
      `host key mismatch at ${endpoint}: pinned ${expectedFingerprint}, presented ${presented}`,
    );
    this.name = 'HostKeyMismatchError';
    this.expectedFingerprint = expectedFingerprint;
    this.presentedFingerprint = presentedFingerprint;
  }
}

export class SshAuthError extends SshError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('auth-rejected', message, options);
    this.name = 'SshAuthError';
  }
}

/** True for failures that mean "the pod's sshd is not answering yet", as opposed to "not trusted". */
export function isNotReadyYet(err: unknown): boolean {
  return err instanceof SshError && (err.kind === 'refused' || err.kind === 'unreachable' || err.kind === 'timeout' || err.kind === 'closed');
}

/** An AbortSignal's reason as an SshError (kept when it already is one). */
export function abortError(signal: AbortSignal): SshError {
  const reason: unknown = signal.reason;
  if (reason instanceof SshError) return reason;
  return new SshError('aborted', 'aborted', { cause: reason });
}
