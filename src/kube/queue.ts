// A work queue with client-go's semantics (util/workqueue): keys, not events, so bursts coalesce into
// one reconcile; a key is never handed to two workers at once; a key added while it is being
// processed is not lost but handed out again once the worker is done with it. An optional priority
// orders the ready keys (priority-fifo.ts): after a restart every object is queued at once, and those
// that need work now must not wait behind those that need only a look.
import { realClock, type Clock, type TimerHandle } from './clock.ts';
import type { QueueObserver } from './instrumentation.ts';
import { PriorityFifo } from './priority-fifo.ts';
import { PerKeyExponentialBackoff, TokenBucket } from './rate-limit.ts';

export interface WorkQueueOptions {
  clock?: Clock;
  /** Per-key backoff of `addRateLimited`: first retry after this, doubling up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Global token bucket shared by every `addRateLimited` call. */
  ratePerSecond?: number;
  burst?: number;
  /** Told of adds, hand-outs, finished keys and retries (metrics). */
  observer?: QueueObserver;
  /**
   * Asked each time a key becomes ready: higher is handed out first (FIFO within one). Without it
   * every key has priority 0 and the queue is a plain FIFO.
   */
  priorityOf?: (key: string) => number;
}

interface Delayed {
  key: string;
  readyAt: number;
}

export class WorkQueue {
  readonly #clock: Clock;
  readonly #backoff: PerKeyExponentialBackoff;
  readonly #bucket: TokenBucket;

  /** The dirty keys that are not being processed. */
  readonly #ready = new PriorityFifo();
  readonly #priorityOf: (key: string) => number;
  readonly #dirty = new Set<string>();
  readonly #processing = new Set<string>();
  #waiters: ((key: string | undefined) => void)[] = [];
  #shuttingDown = false;
  readonly #observer: QueueObserver | undefined;
  // For the observer: when each dirty key was added, and when each key being processed was handed out.
  readonly #addedAt = new Map<string, number>();
  readonly #startedAt = new Map<string, number>();

  // Delayed adds: the authoritative ready time per key, and a min-heap that may hold stale entries.
  readonly #readyAt = new Map<string, number>();
  #heap: Delayed[] = [];
  #timer: TimerHandle | undefined;
  #timerAt = Number.POSITIVE_INFINITY;

  constructor(opts: WorkQueueOptions = {}) {
    this.#clock = opts.clock ?? realClock;
    this.#backoff = new PerKeyExponentialBackoff({ baseDelayMs: opts.baseDelayMs ?? 1000, maxDelayMs: opts.maxDelayMs ?? 300_000 });
    this.#bucket = new TokenBucket({ ratePerSecond: opts.ratePerSecond ?? 10, burst: opts.burst ?? 100, clock: this.#clock });
    this.#observer = opts.observer;
    this.#priorityOf = opts.priorityOf ?? (() => 0);
  }

  /** Marks `key` as needing work. Once shut down a no-op; if it is already waiting, it may only move up. */
  add(key: string): void {
    if (this.#shuttingDown) return;
    if (this.#dirty.has(key)) {
      if (!this.#processing.has(key)) this.#ready.push(key, this.#priorityOf(key));
      return;
    }
    this.#dirty.add(key);
    if (this.#observer) {
      this.#observer.added();
      if (!this.#addedAt.has(key)) this.#addedAt.set(key, this.#clock.now());
    }
    if (this.#processing.has(key)) return; // re-queued by done()
    this.#ready.push(key, this.#priorityOf(key));
    this.#handOut();
  }

  /** The next key to work on; resolves undefined once the queue is shut down and empty. Call done(key) after. */
  get(): Promise<string | undefined> {
    const key = this.#pop();
    if (key !== undefined || this.#shuttingDown) return Promise.resolve(key);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Releases `key` from its worker; if it was added meanwhile, it is queued again. */
  done(key: string): void {
    this.#processing.delete(key);
    const started = this.#startedAt.get(key);
    if (started !== undefined) {
      this.#startedAt.delete(key);
      this.#observer?.finished((this.#clock.now() - started) / 1000);
    }
    if (this.#dirty.has(key)) {
      this.#ready.push(key, this.#priorityOf(key));
      this.#handOut();
    }
  }

  /** Adds `key` after `ms`. If it is already waiting for a delayed add, the earlier time wins. */
  addAfter(key: string, ms: number): void {
    if (this.#shuttingDown) return;
    if (!(ms > 0)) return this.add(key);
    const readyAt = this.#clock.now() + ms;
    const existing = this.#readyAt.get(key);
    if (existing !== undefined && existing <= readyAt) return;
    this.#readyAt.set(key, readyAt);
    heapPush(this.#heap, { key, readyAt });
    this.#arm();
  }

  /** Adds `key` unless it is queued or being processed already, or has a delayed add due within `withinMs`. */
  addUnlessDue(key: string, withinMs: number): void {
    if (this.#dirty.has(key) || this.#processing.has(key)) return;
    const readyAt = this.#readyAt.get(key);
    if (readyAt !== undefined && readyAt <= this.#clock.now() + withinMs) return;
    this.add(key);
  }

  /**
   * Adds `key` after its own exponential backoff (at most `atMostMs`, for a wait on something that sends
   * no event) or the global rate limit, whichever is longer.
   */
  addRateLimited(key: string, atMostMs = Number.POSITIVE_INFINITY): void {
    if (!this.#shuttingDown) this.#observer?.retried();
    this.addAfter(key, Math.max(Math.min(this.#backoff.when(key), atMostMs), this.#bucket.reserve()));
  }

  /** Resets the backoff of `key` (call on success). */
  forget(key: string): void {
    this.#backoff.forget(key);
  }

  numRequeues(key: string): number {
    return this.#backoff.numRequeues(key);
  }

  /** Keys ready to be handed out. */
  len(): number {
    return this.#ready.size;
  }

  /** Keys waiting for a delayed add. */
  delayedLen(): number {
    return this.#readyAt.size;
  }

  processingLen(): number {
    return this.#processing.size;
  }


  isShuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Stops accepting keys and drops delayed ones; keys already queued are still handed out (drain). */
  shutDown(): void {
    this.#shuttingDown = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    this.#readyAt.clear();
    this.#heap = [];
    if (this.len() === 0) {
      const waiters = this.#waiters;
      this.#waiters = [];
      for (const resolve of waiters) resolve(undefined);
    }
  }

  #pop(): string | undefined {
    const key = this.#ready.pop();
    if (key === undefined) return undefined;
    this.#dirty.delete(key);
    this.#processing.add(key);
    if (this.#observer) {
      const now = this.#clock.now();
      this.#observer.handedOut((now - (this.#addedAt.get(key) ?? now)) / 1000);
      this.#addedAt.delete(key);
      this.#startedAt.set(key, now);
    }
    return key;
  }

  #handOut(): void {
    while (this.#waiters.length > 0 && this.len() > 0) {
      const resolve = this.#waiters.shift() as (key: string | undefined) => void;
      resolve(this.#pop());
    }
  }

  #arm(): void {
    while (this.#heap.length > 0 && !this.#isCurrent(this.#heap[0] as Delayed)) heapPop(this.#heap);
    const next = this.#heap[0];
    if (next === undefined) {
      if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#timerAt = Number.POSITIVE_INFINITY;
      return;
    }
    if (this.#timer !== undefined && this.#timerAt === next.readyAt) return;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timerAt = next.readyAt;
    this.#timer = this.#clock.setTimeout(() => this.#fire(), next.readyAt - this.#clock.now());
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const now = this.#clock.now();
    while (this.#heap.length > 0 && (this.#heap[0] as Delayed).readyAt <= now) {
      const entry = heapPop(this.#heap) as Delayed;
      if (!this.#isCurrent(entry)) continue;
      this.#readyAt.delete(entry.key);
      this.add(entry.key);
    }
    this.#arm();
  }

  #isCurrent(entry: Delayed): boolean {
    return this.#readyAt.get(entry.key) === entry.readyAt;
  }
}

function heapPush(heap: Delayed[], entry: Delayed): void {
  heap.push(entry);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if ((heap[parent] as Delayed).readyAt <= entry.readyAt) break;
    heap[i] = heap[parent] as Delayed;
    i = parent;
  }
  heap[i] = entry;
}

function heapPop(heap: Delayed[]): Delayed | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (top === undefined || last === undefined || heap.length === 0) return top;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    if (left >= heap.length) break;
    const right = left + 1;
    const child = right < heap.length && (heap[right] as Delayed).readyAt < (heap[left] as Delayed).readyAt ? right : left;
    if ((heap[child] as Delayed).readyAt >= last.readyAt) break;
    heap[i] = heap[child] as Delayed;
    i = child;
  }
  heap[i] = last;
  return top;
}
