// Runs N workers over a WorkQueue, calling a level-based reconcile(key). The five outcomes follow
// controller-runtime's reconcileHandler: error -> rate-limited retry (a conflict quietly), terminal
// error -> logged and dropped, requeueAfter -> forget + addAfter, requeueRateLimited -> addRateLimited, success -> forget.
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log.ts';
import { realClock, type Clock } from './clock.ts';
import { describeError, isConflict, TerminalError } from './errors.ts';
import type { ControllerObserver, QueueObserver, ReconcileResultLabel } from './instrumentation.ts';
import { WorkQueue } from './queue.ts';
import { splitKey } from './keys.ts';

export { TerminalError };

export interface ReconcileResult {
  /** Reconcile this key again after this long (0: at once; e.g. to poll something that sends no events). */
  requeueAfterMs?: number;
  /**
   * Reconcile it again through the queue's per-key rate limiter, as after a failure but without one
   * (controller-runtime's `Result{Requeue: true}`): the delay grows until a result of another kind,
   * at most `atMostMs` when what the key waits for sends no event.
   */
  requeueRateLimited?: { atMostMs?: number };
}

export interface ReconcileContext {
  reconcileId: string;
  /** Carries the key (and namespace/name when the key has that shape) and the reconcile id. */
  log: Logger;
  /** Aborted when the controller is stopped with `{ abort: true }` (e.g. leadership lost). */
  signal: AbortSignal;
  /** A long step (a transfer) calls this as it moves: a reconcile is stuck only when it has not for a while. */
  progress: () => void;
}

export type Reconciler = (key: string, ctx: ReconcileContext) => Promise<ReconcileResult | undefined | void>;

export interface ControllerOptions {
  name: string;
  reconcile: Reconciler;
  log: Logger;
  maxConcurrentReconciles?: number;
  queue?: WorkQueue;
  /** Told of every reconcile's result and duration (metrics). */
  observer?: ControllerObserver;
  /** Given to the queue the controller creates (ignored with `queue`). */
  queueObserver?: QueueObserver;
  /** Times each reconcile (in-flight ages, durations) and drives the queue the controller creates. */
  clock?: Clock;
  /** Given to the queue the controller creates (ignored with `queue`): which ready keys go first. */
  priorityOf?: (key: string) => number;
}

/** A reconcile in flight, as the health check sees it. */
export interface InFlightReconcile {
  key: string;
  runningMs: number;
  /** Since it started, or since it last reported progress. */
  idleMs: number;
}

interface Running {
  key: string;
  startedAt: number;
  progressAt: number;
}

export type ReconcileOutcome = 'success' | 'requeue_after' | 'requeue_rate_limited' | 'error' | 'conflict' | 'terminal_error';

export interface ControllerStats {
  reconciles: Record<ReconcileOutcome, number>;
  activeWorkers: number;
  queueLength: number;
  delayed: number;
}

export class Controller {
  readonly name: string;
  readonly queue: WorkQueue;
  readonly #reconcile: Reconciler;
  readonly #log: Logger;
  readonly #workers: number;
  readonly #clock: Clock;
  readonly #abort = new AbortController();
  #running: Promise<void>[] = [];
  #started = false;
  #stopping = false;
  #active = 0;
  readonly #observer: ControllerObserver | undefined;
  readonly #inFlight = new Map<string, Running>();
  readonly #counts: Record<ReconcileOutcome, number> = { success: 0, requeue_after: 0, requeue_rate_limited: 0, error: 0, conflict: 0, terminal_error: 0 };

  constructor(opts: ControllerOptions) {
    const workers = opts.maxConcurrentReconciles ?? 1;
    if (!Number.isInteger(workers) || workers < 1) throw new RangeError('maxConcurrentReconciles must be a positive integer');
    this.name = opts.name;
    this.#reconcile = opts.reconcile;
    this.#log = opts.log.child({ controller: opts.name });
    this.#workers = workers;
    this.#clock = opts.clock ?? realClock;
    this.queue = opts.queue ?? new WorkQueue({ clock: this.#clock, observer: opts.queueObserver, priorityOf: opts.priorityOf });
    this.#observer = opts.observer;
  }

  get maxConcurrentReconciles(): number {
    return this.#workers;
  }

  /** The reconciles running now, oldest first. */
  inFlight(now = this.#clock.now()): InFlightReconcile[] {
    return [...this.#inFlight.values()]
      .map((r) => ({ key: r.key, runningMs: now - r.startedAt, idleMs: now - r.progressAt }))
      .sort((a, b) => b.runningMs - a.runningMs);
  }

  /** Queues `key` for reconciliation (de-duplicated). */
  enqueue(key: string): void {
    this.queue.add(key);
  }

  /**
   * A periodic resync's add: the safety net for a key nothing else would bring back. A key already being
   * looked at, or with a look due within `periodMs`, is left to it: queuing every key at once would put
   * the runs that need a look now behind all the others.
   */
  resync(key: string, periodMs: number): void {
    this.queue.addUnlessDue(key, periodMs);
  }

  start(): void {
    if (this.#started) throw new Error(`controller ${this.name} already started`);
    this.#started = true;
    for (let i = 0; i < this.#workers; i++) this.#running.push(this.#worker());
    this.#log.info({ workers: this.#workers }, 'controller started');
  }

  /**
   * Stops taking keys and waits for in-flight reconciles. `abort: true` also aborts their signal
   * (leadership lost: they must not go on writing as if we were still the leader).
   */
  async stop(opts: { abort?: boolean } = {}): Promise<void> {
    this.#stopping = true;
    if (opts.abort) this.#abort.abort(new Error(`controller ${this.name} stopped`));
    this.queue.shutDown();
    await Promise.all(this.#running);
    this.#running = [];
    this.#log.info('controller stopped');
  }

  stats(): ControllerStats {
    return {
      reconciles: { ...this.#counts },
      activeWorkers: this.#active,
      queueLength: this.queue.len(),
      delayed: this.queue.delayedLen(),
    };
  }

  async #worker(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      if (this.#stopping) {
        this.queue.done(key);
        return;
      }
      this.#active += 1;
      try {
        await this.#process(key);
      } finally {
        this.#active -= 1;
        this.queue.done(key);
      }
    }
  }

  async #process(key: string): Promise<void> {
    const reconcileId = randomUUID();
    const [namespace, name] = splitKey(key);
    const log = this.#log.child(namespace ? { namespace, name, reconcileId } : { key, reconcileId });
    const started = this.#clock.now();
    const running: Running = { key, startedAt: started, progressAt: started };
    this.#inFlight.set(reconcileId, running);
    const progress = (): void => { running.progressAt = this.#clock.now(); };
    let outcome: ReconcileOutcome;
    let requeueAfter: number | undefined;
    try {
      const result = await this.#reconcile(key, { reconcileId, log, signal: this.#abort.signal, progress });
      const after = result?.requeueAfterMs;
      requeueAfter = after;
      if (result?.requeueRateLimited) {
        this.queue.addRateLimited(key, result.requeueRateLimited.atMostMs);
        outcome = 'requeue_rate_limited';
      } else {
        this.queue.forget(key);
        // 0 means "again at once": the step just taken decides what comes next.
        if (after !== undefined && after >= 0) {
          this.queue.addAfter(key, after);
          outcome = 'requeue_after';
        } else {
          outcome = 'success';
        }
      }
    } catch (err) {
      if (err instanceof TerminalError) {
        this.queue.forget(key);
        outcome = 'terminal_error';
        log.error({ err: describeError(err) }, 'reconcile failed terminally; not retrying');
      } else if (isConflict(err)) {
        this.queue.addRateLimited(key);
        outcome = 'conflict';
        log.debug({ err: describeError(err) }, 'conflict; requeued');
      } else {
        this.queue.addRateLimited(key);
        outcome = 'error';
        log.error({ err: describeError(err), requeues: this.queue.numRequeues(key) }, 'reconcile failed; retrying with backoff');
      }
    }
    this.#inFlight.delete(reconcileId);
    this.#counts[outcome] += 1;
    const ms = this.#clock.now() - started;
    this.#observer?.reconciled(resultLabel(outcome, requeueAfter), ms / 1000,
      outcome === 'terminal_error' ? 'terminal' : outcome === 'error' || outcome === 'conflict' ? 'retried' : undefined);
    log.debug({ outcome, ms: Math.round(ms) }, 'reconciled');
  }
}

/** controller-runtime's labels: a conflict and a terminal error are errors; requeue-after 0 is a requeue. */
function resultLabel(outcome: ReconcileOutcome, requeueAfterMs: number | undefined): ReconcileResultLabel {
  switch (outcome) {
    case 'success': return 'success';
    case 'requeue_after': return requeueAfterMs === 0 ? 'requeue' : 'requeue_after';
    // As controller-runtime labels Result{Requeue: true}.
    case 'requeue_rate_limited': return 'requeue';
    default: return 'error';
  }
}
