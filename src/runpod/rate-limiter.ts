// One request budget per Runpod account, shared by every caller using that account's key. Runpod
// counts calls per account, not per process part, so the observer, the reconcilers and the sweeper
// must draw from one budget, and a 429 seen by one of them pauses all of them.
//
// Priority: a waiting delete is served before a waiting create, before a waiting read; and each
// window keeps a small reserve that reads (and, smaller, creates) may not spend, so a delete that
// arrives after a burst of reads still finds room. Deletes stop billing; nothing else is as urgent.
import { createHash } from 'node:crypto';
import { type Clock, type TimerHandle, systemClock } from './clock.ts';
import { headerValue, parseRateLimit, parseRateLimitPolicy } from './rate-limit-headers.ts';

export type CallPriority = 'delete' | 'create' | 'read';
const PRIORITIES: readonly CallPriority[] = ['delete', 'create', 'read'];

export type HeaderRecord = Record<string, string | string[] | undefined>;

export interface RateLimiterOptions {
  clock?: Clock;
  /** Budget assumed until Runpod's headers describe the real one: half the documented 60 a minute. */
  defaultPolicy?: { quota: number; windowMs: number };
  /** Share of each window's quota that reads / creates leave for higher priorities. */
  reserve?: { read: number; create: number };
}

export interface AcquireOptions {
  signal?: AbortSignal | undefined;
  /** Give up (RateLimitWaitTimeout) rather than wait longer than this for a slot. */
  maxWaitMs?: number | undefined;
}

/** A granted slot. `complete` feeds the answer's headers back and frees the slot; call it exactly once. */
export interface Permit {
  /** How long the caller waited for it: 0 when granted at once (a busy process's scheduling is no wait). */
  readonly waitedMs: number;
  complete(headers?: HeaderRecord): void;
}

export class RateLimitWaitTimeout extends Error {
  readonly retryAfterMs: number;
  constructor(retryAfterMs: number) {
    super(`no Runpod request slot free; next expected in ${retryAfterMs} ms`);
    this.name = 'RateLimitWaitTimeout';
    this.retryAfterMs = retryAfterMs;
  }
}

interface Window {
  quota: number;
  windowMs: number;
  remaining: number;
  resetAt: number;
}

interface Waiter {
  priority: CallPriority;
  grant: () => void;
  fail: (err: Error) => void;
}

export interface RateLimiterSnapshot {
  inFlight: number;
  pausedForMs: number;
  waiting: Record<CallPriority, number>;
  windows: { name: string; quota: number; remaining: number; resetInMs: number }[];
}

export class RateLimiter {
  private readonly clock: Clock;
  private readonly reserve: { read: number; create: number };
  private readonly windows = new Map<string, Window>();
  private readonly queues: Record<CallPriority, Waiter[]> = { delete: [], create: [], read: [] };
  private informedByServer = false;
  private answered = false;
  private pausedUntil = 0;
  private inFlight = 0;
  private timer: TimerHandle | undefined;

  constructor(options: RateLimiterOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.reserve = options.reserve ?? { read: 0.1, create: 0.05 };
    const policy = options.defaultPolicy ?? { quota: 30, windowMs: 60_000 };
    this.windows.set('default', { ...policy, remaining: policy.quota, resetAt: this.clock.now() + policy.windowMs });
  }

  acquire(priority: CallPriority, options: AcquireOptions = {}): Promise<Permit> {
    const { signal, maxWaitMs } = options;
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<Permit>((resolve, reject) => {
      const askedAt = this.clock.now();
      let queued = false;
      let deadline: TimerHandle | undefined;
      const cleanup = (): void => {
        if (deadline !== undefined) this.clock.clearTimer(deadline);
        signal?.removeEventListener('abort', onAbort);
        const queue = this.queues[priority];
        const at = queue.indexOf(waiter);
        if (at >= 0) queue.splice(at, 1);
      };
      const waiter: Waiter = {
        priority,
        grant: () => {
          cleanup();
          resolve(this.permit(queued ? Math.max(0, this.clock.now() - askedAt) : 0));
        },
        fail: (err) => {
          cleanup();
          reject(err);
          this.pump();
        },
      };
      const onAbort = (): void => waiter.fail(signal?.reason as Error);
      signal?.addEventListener('abort', onAbort, { once: true });

      if (maxWaitMs !== undefined) {
        const knownWait = this.earliestGrant(priority, this.clock.now()) - this.clock.now();
        if (knownWait > maxWaitMs) {
          signal?.removeEventListener('abort', onAbort);
          reject(new RateLimitWaitTimeout(knownWait));
          return;
        }
        deadline = this.clock.setTimer(() => {
          const now = this.clock.now();
          waiter.fail(new RateLimitWaitTimeout(Math.max(1, this.earliestGrant(priority, now) - now)));
        }, maxWaitMs);
      }
      this.queues[priority].push(waiter);
      this.pump();
      // Not granted within this call: from here on the caller waits.
      queued = true;
    });
  }

  /** Feeds `RateLimit` / `RateLimit-Policy` from any answer (including one that is not a permit's). */
  observe(headers: HeaderRecord): void {
    const policies = parseRateLimitPolicy(headerValue(headers, 'ratelimit-policy'));
    const states = parseRateLimit(headerValue(headers, 'ratelimit'));
    if (policies.length === 0 && states.length === 0) return;
    const now = this.clock.now();
    if (!this.informedByServer) {
      this.windows.clear();
      this.informedByServer = true;
    }
    for (const p of policies) {
      const w = this.windows.get(p.name);
      if (w) {
        w.quota = p.quota;
        w.windowMs = p.windowMs;
      } else {
        this.windows.set(p.name, { quota: p.quota, windowMs: p.windowMs, remaining: p.quota, resetAt: now + p.windowMs });
      }
    }
    // Requests still in flight (other than the one answering) may not be counted in `r` yet; assume
    // they are not. Erring low only costs a little waiting; erring high costs a 429 for everyone.
    const othersInFlight = Math.max(0, this.inFlight - 1);
    for (const s of states) {
      const w = this.windows.get(s.name) ?? { quota: s.remaining, windowMs: Math.max(1000, s.resetMs), remaining: 0, resetAt: 0 };
      w.remaining = Math.max(0, s.remaining - othersInFlight);
      w.resetAt = now + s.resetMs;
      this.windows.set(s.name, w);
    }
    this.pump();
  }

  /** After a 429: nobody using this account sends anything for `ms`. */
  backOff(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, this.clock.now() + Math.max(0, ms));
    this.pump();
  }

  snapshot(): RateLimiterSnapshot {
    const now = this.clock.now();
    this.refresh(now);
    return {
      inFlight: this.inFlight,
      pausedForMs: Math.max(0, this.pausedUntil - now),
      waiting: { delete: this.queues.delete.length, create: this.queues.create.length, read: this.queues.read.length },
      windows: [...this.windows].map(([name, w]) => ({ name, quota: w.quota, remaining: w.remaining, resetInMs: Math.max(0, w.resetAt - now) })),
    };
  }

  private permit(waitedMs: number): Permit {
    this.inFlight += 1;
    for (const w of this.windows.values()) w.remaining = Math.max(0, w.remaining - 1);
    let done = false;
    return {
      waitedMs,
      complete: (headers) => {
        if (done) return;
        done = true;
        if (headers) {
          this.answered = true;
          this.observe(headers);
        }
        this.inFlight -= 1;
        this.pump();
      },
    };
  }

  private refresh(now: number): void {
    for (const w of this.windows.values()) {
      if (now >= w.resetAt) {
        w.remaining = w.quota;
        w.resetAt = now + w.windowMs;
      }
    }
  }

  private reserveFor(priority: CallPriority, quota: number): number {
    if (priority === 'delete') return 0;
    return Math.floor(quota * this.reserve[priority]);
  }

  /** When a request of this priority could be granted, ignoring who else is waiting. */
  private earliestGrant(priority: CallPriority, now: number): number {
    this.refresh(now);
    let at = Math.max(now, this.pausedUntil);
    for (const w of this.windows.values()) {
      if (w.remaining <= this.reserveFor(priority, w.quota)) at = Math.max(at, w.resetAt);
    }
    return at;
  }

  private pump(): void {
    if (this.timer !== undefined) {
      this.clock.clearTimer(this.timer);
      this.timer = undefined;
    }
    for (;;) {
      const priority = PRIORITIES.find((p) => this.queues[p].length > 0);
      if (priority === undefined) return;
      // Until Runpod has answered once, the real quota is unknown: one request at a time (deletes
      // excepted), so the first answer can tell the rest how much room there is.
      if (!this.answered && priority !== 'delete' && this.inFlight > 0) return;
      const now = this.clock.now();
      const at = this.earliestGrant(priority, now);
      // Strict priority: while the most urgent waiter cannot go, nobody behind it goes either
      // (its reserve is never smaller, so it could not go anyway).
      if (at > now) {
        this.timer = this.clock.setTimer(() => {
          this.timer = undefined;
          this.pump();
        }, at - now);
        return;
      }
      this.queues[priority][0]?.grant();
    }
  }
}

const shared = new Map<string, RateLimiter>();

/** The limiter every client of this account key shares within the process (keyed by a hash, not the key). */
export function rateLimiterForKey(apiKey: string, options?: RateLimiterOptions): RateLimiter {
  const id = createHash('sha256').update(apiKey).digest('hex');
  let limiter = shared.get(id);
  if (!limiter) {
    limiter = new RateLimiter(options);
    shared.set(id, limiter);
  }
  return limiter;
}
