// Long transfers (result retrievals) run here, outside the reconciles: a retrieval can last hours,
// and a worker held that long starves every other run's deadline guard, deletion and finalizer.
// At most `maxConcurrent` transfers run at once; the rest wait, the one due soonest first (its
// results are lost at that time: the pod's deadline, or the end of its retrieve grace), in the order
// they were queued among equals. A reconcile starts a
// transfer and returns at once; when it ends, the pool asks for the run to be reconciled again
// (`onSettled`), and that reconcile takes the outcome (once) and applies it as the step's result.
// Nothing here survives a restart, on purpose: a crash loses only the transfers in flight, which
// the next reconcile starts again (their staging is discarded at start).
import { realClock, type Clock } from '../../kube/clock.ts';

/** A transfer's work; it must stop soon after `signal` aborts, and calls `progress` as it moves. */
export type TransferJob<T> = (signal: AbortSignal, progress: () => void) => Promise<T>;

export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Where a transfer stands, as the run's status reports it. */
export type TransferView<T> =
  | { state: 'queued'; ahead: number; sinceMs: number }
  | { state: 'running'; sinceMs: number }
  | { state: 'settled'; outcome: Settled<T> };

export interface TransferPoolOptions {
  maxConcurrent: number;
  /** Called with a transfer's key when it settles: the run is reconciled again to take the outcome. */
  onSettled: (key: string) => void;
  clock?: Clock;
}

interface Entry<T> {
  key: string;
  job: TransferJob<T>;
  abort: AbortController;
  /** Wall-clock ms by which it must be done (only compared with other entries'); none: last. */
  dueAt: number;
  /** When it was queued, then when it started. */
  since: number;
  /** When it last reported progress (running only). */
  progressAt: number;
  state: 'queued' | 'running' | 'settled';
  /** Its slot was given back (when aborted: a job slow to wind down must not hold a slot). */
  released?: boolean;
  outcome?: Settled<T>;
  done?: Promise<void>;
}

export class TransferPool<T> {
  readonly maxConcurrent: number;
  readonly #onSettled: (key: string) => void;
  readonly #clock: Clock;
  /** In insertion order: the order among queued ones due at the same time. */
  readonly #entries = new Map<string, Entry<T>>();
  #running = 0;
  #closed = false;

  constructor(options: TransferPoolOptions) {
    if (!Number.isInteger(options.maxConcurrent) || options.maxConcurrent < 1) throw new RangeError('maxConcurrent must be a positive integer');
    this.maxConcurrent = options.maxConcurrent;
    this.#onSettled = options.onSettled;
    this.#clock = options.clock ?? realClock;
  }

  /**
   * Queues a transfer under `id` (one per id: a second start while one is queued, running or settled
   * and not yet taken changes nothing), due by `dueAt` (wall-clock ms). Returns where it stands.
   */
  start(id: string, key: string, job: TransferJob<T>, dueAt = Number.POSITIVE_INFINITY): TransferView<T> {
    if (this.#closed) throw new Error('the transfer pool is shut down');
    if (!this.#entries.has(id)) {
      const now = this.#clock.now();
      this.#entries.set(id, { key, job, abort: new AbortController(), dueAt, since: now, progressAt: now, state: 'queued' });
      this.#startQueued();
    }
    return this.look(id)!;
  }

  look(id: string): TransferView<T> | undefined {
    const entry = this.#entries.get(id);
    if (!entry) return undefined;
    const sinceMs = this.#clock.now() - entry.since;
    if (entry.state === 'settled') return { state: 'settled', outcome: entry.outcome! };
    if (entry.state === 'running') return { state: 'running', sinceMs };
    const queued = this.#queued();
    return { state: 'queued', ahead: this.#running + queued.indexOf(entry), sinceMs };
  }

  /** The settled outcome, handed out once (the entry goes); undefined while there is none. */
  take(id: string): Settled<T> | undefined {
    const entry = this.#entries.get(id);
    if (entry?.state !== 'settled') return undefined;
    this.#entries.delete(id);
    return entry.outcome;
  }

  /**
   * Aborts the transfer of `id` (queued: it never starts) and forgets it; its slot goes to the next
   * at once. It does not wait for the job to wind down: a pod's delete must never wait on a transfer
   * (the job discards its own staging).
   */
  abort(id: string, reason: string): void {
    const entry = this.#entries.get(id);
    if (!entry) return;
    this.#entries.delete(id);
    entry.abort.abort(new Error(reason));
    if (entry.state === 'running') this.#release(entry);
  }

  /** Shutdown: nothing new starts, every transfer is aborted; resolves once all have wound down (staging discarded). */
  async abortAll(reason: string): Promise<void> {
    this.#closed = true;
    const entries = [...this.#entries.values()];
    for (const id of [...this.#entries.keys()]) this.abort(id, reason);
    await Promise.all(entries.map((entry) => entry.done ?? Promise.resolve()));
  }

  /** Transfers running now and waiting for a slot (metrics, tests). */
  stats(): { running: number; queued: number } {
    return { running: this.#running, queued: this.#queued().length };
  }

  /** The running transfers as the health check sees reconciles: a transfer that stopped moving is a stuck worker. */
  inFlight(): { key: string; runningMs: number; idleMs: number }[] {
    const now = this.#clock.now();
    return [...this.#entries.values()].filter((entry) => entry.state === 'running')
      .map((entry) => ({ key: entry.key, runningMs: now - entry.since, idleMs: now - entry.progressAt }));
  }

  #startQueued(): void {
    for (const entry of this.#queued()) {
      if (this.#running >= this.maxConcurrent) return;
      this.#run(entry);
    }
  }

  /** The queued entries in the order they start: due soonest first (a stable sort keeps insertion order among equals). */
  #queued(): Entry<T>[] {
    return [...this.#entries.values()].filter((entry) => entry.state === 'queued').sort((a, b) => (a.dueAt === b.dueAt ? 0 : a.dueAt < b.dueAt ? -1 : 1));
  }

  #release(entry: Entry<T>): void {
    if (entry.released) return;
    entry.released = true;
    this.#running--;
    if (!this.#closed) this.#startQueued();
  }

  #run(entry: Entry<T>): void {
    entry.state = 'running';
    entry.since = entry.progressAt = this.#clock.now();
    this.#running++;
    entry.done = (async () => {
      let outcome: Settled<T>;
      try {
        outcome = { ok: true, value: await entry.job(entry.abort.signal, () => { entry.progressAt = this.#clock.now(); }) };
      } catch (error) {
        outcome = { ok: false, error };
      }
      entry.state = 'settled';
      entry.outcome = outcome;
      const aborted = entry.abort.signal.aborted;
      this.#release(entry);
      // An aborted transfer was forgotten by whoever aborted it: nobody waits for its outcome.
      if (!aborted) this.#onSettled(entry.key);
    })();
  }
}
