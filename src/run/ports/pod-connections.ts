// One long-lived pinned SSH connection per ready pod, kept between reconciles. A running run is looked
// at every poll; a new handshake each time (key exchange on both ends, a forked sshd on the pod) was
// most of what following a job cost, and bounded how many running runs the workers could keep up with.
// A reconcile takes its run's connection, uses it alone (a key is never reconciled twice at once), and
// gives it back only when every step over it went well: a connection that stalled, broke or was
// aborted is closed, and the next reconcile connects afresh (that is the reconnect; its spacing is
// the run's requeue). A connection nobody took back for `idleMs` (the run ended, was deleted, or its
// pod went) is closed, and at most `max` are kept: the least recently used goes first.
import type { SshConnection } from '../../ssh/index.ts';
import { connectToPod, type ProbeTarget } from './job-host.ts';

/** Which pod a connection reaches, and with which keys: another one (a new pod, a new port mapping) is another connection. */
export interface PodTarget extends ProbeTarget { podId: string }

export interface PodConnectionsOptions {
  idleMs?: number;
  max?: number;
  now?: () => number;
  connect?: (target: ProbeTarget, signal?: AbortSignal) => Promise<SshConnection>;
}

interface Kept { target: string; connection: SshConnection; since: number }

export interface TakenConnection {
  connection: SshConnection;
  /** Whether it was kept from an earlier reconcile (no handshake this time). */
  reused: boolean;
}

export class PodConnections {
  readonly #kept = new Map<string, Kept>();
  readonly #idleMs: number;
  readonly #max: number;
  readonly #now: () => number;
  readonly #connect: (target: ProbeTarget, signal?: AbortSignal) => Promise<SshConnection>;
  #closed = false;

  constructor(options: PodConnectionsOptions = {}) {
    this.#idleMs = options.idleMs ?? 120_000;
    this.#max = options.max ?? 1000;
    this.#now = options.now ?? Date.now;
    this.#connect = options.connect ?? connectToPod;
  }

  /** The run's kept connection to this pod when it is still open, else a new one (throws as connectPinned does). */
  async take(runUid: string, target: PodTarget, signal?: AbortSignal): Promise<TakenConnection> {
    this.#closeIdle();
    const kept = this.#kept.get(runUid);
    this.#kept.delete(runUid);
    if (kept && kept.target === targetKey(target) && !kept.connection.closed) return { connection: kept.connection, reused: true };
    kept?.connection.close();
    return { connection: await this.#connect(target, signal), reused: false };
  }

  /** Kept for the run's next reconcile: every step over it went well. */
  giveBack(runUid: string, target: PodTarget, connection: SshConnection): void {
    if (this.#closed || connection.closed) {
      connection.close();
      return;
    }
    this.#kept.get(runUid)?.connection.close();
    this.#kept.delete(runUid);
    this.#kept.set(runUid, { target: targetKey(target), connection, since: this.#now() });
    for (const [uid, oldest] of this.#kept) {
      if (this.#kept.size <= this.#max) break;
      this.#forget(uid, oldest);
    }
  }

  /** The run's pod is not to be reached now (not ready, ended, being deleted): its kept connection goes. */
  release(runUid: string): void {
    const kept = this.#kept.get(runUid);
    if (kept) this.#forget(runUid, kept);
  }

  get size(): number {
    return this.#kept.size;
  }

  /** At the end of the term: every kept connection closed, and none kept from now on. */
  closeAll(): void {
    this.#closed = true;
    for (const [uid, kept] of this.#kept) this.#forget(uid, kept);
  }

  #closeIdle(): void {
    const before = this.#now() - this.#idleMs;
    // Insertion order is the order of giving back: the first not idle ends the idle ones.
    for (const [uid, kept] of this.#kept) {
      if (kept.since > before) break;
      this.#forget(uid, kept);
    }
  }

  #forget(runUid: string, kept: Kept): void {
    this.#kept.delete(runUid);
    kept.connection.close();
  }
}

// The run's client key and host key are made together (its -ssh Secret): the host key names the pair.
function targetKey({ podId, host, port, keys }: PodTarget): string {
  return `${podId} ${host}:${port} ${keys.hostPublicKey}`;
}
