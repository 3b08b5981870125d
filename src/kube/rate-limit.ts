// The two halves of client-go's DefaultControllerRateLimiter: a per-key exponential backoff (one
// failing key backs off on its own) and a global token bucket (a burst of failing keys cannot turn
// into a retry storm against the API server or Runpod).
import { exponentialDelay, jittered } from './backoff.ts';
import { realClock, type Clock } from './clock.ts';

export interface ExponentialBackoffOptions {
  baseDelayMs: number;
  maxDelayMs: number;
}

/** Per-key `base * 2^failures`, capped; `forget` resets a key once it succeeds. */
export class PerKeyExponentialBackoff {
  readonly #failures = new Map<string, number>();
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;

  constructor({ baseDelayMs, maxDelayMs }: ExponentialBackoffOptions) {
    if (!(baseDelayMs > 0) || !(maxDelayMs >= baseDelayMs)) throw new RangeError('need 0 < baseDelayMs <= maxDelayMs');
    this.#baseDelayMs = baseDelayMs;
    this.#maxDelayMs = maxDelayMs;
  }

  /** The delay before the next retry of `key`; counts one more failure. */
  when(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    return exponentialDelay(this.#baseDelayMs, this.#maxDelayMs, failures);
  }

  numRequeues(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }
}

export interface TokenBucketOptions {
  /** Tokens added per second. */
  ratePerSecond: number;
  /** Bucket size: how many can go at once after a quiet period. */
  burst: number;
  clock?: Clock;
}

/** A token bucket that starts full (golang.org/x/time/rate semantics). */
export class TokenBucket {
  readonly #rate: number;
  readonly #burst: number;
  readonly #clock: Clock;
  #tokens: number;
  #last: number;

  constructor({ ratePerSecond, burst, clock = realClock }: TokenBucketOptions) {
    if (!(ratePerSecond > 0) || !(burst >= 1)) throw new RangeError('need ratePerSecond > 0 and burst >= 1');
    this.#rate = ratePerSecond;
    this.#burst = burst;
    this.#clock = clock;
    this.#tokens = burst;
    this.#last = clock.now();
  }

  #refill(): void {
    const now = this.#clock.now();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#last) / 1000) * this.#rate);
    this.#last = now;
  }

  /** Takes a token now or in the future (the bucket may go into debt); returns how long to wait for it. */
  reserve(): number {
    this.#refill();
    this.#tokens -= 1;
    return this.#tokens >= 0 ? 0 : (-this.#tokens / this.#rate) * 1000;
  }

  /** Takes a token only if one is available now. */
  tryTake(): boolean {
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}

export interface RetryBackoffOptions {
  initialMs: number;
  maxMs: number;
  /** Extra random share of each delay: 1 means up to twice the nominal delay (client-go's reflector). */
  jitter?: number;
  /** A stream that stayed healthy this long starts again from `initialMs`. */
  resetAfterMs?: number;
  clock?: Clock;
  random?: () => number;
}

/** Exponential backoff with jitter for one retrying loop (a watch, a lease renewal). */
export class RetryBackoff {
  readonly #opts: Required<RetryBackoffOptions>;
  #attempt = 0;
  #lastFailure = Number.NEGATIVE_INFINITY;

  constructor(opts: RetryBackoffOptions) {
    this.#opts = { jitter: 1, resetAfterMs: Number.POSITIVE_INFINITY, clock: realClock, random: Math.random, ...opts };
  }

  /** The delay before the next attempt; starts over when the last failure is older than `resetAfterMs`. */
  next(): number {
    const { initialMs, maxMs, jitter, resetAfterMs, clock, random } = this.#opts;
    const now = clock.now();
    if (now - this.#lastFailure >= resetAfterMs) this.#attempt = 0;
    this.#lastFailure = now;
    const nominal = exponentialDelay(initialMs, maxMs, this.#attempt);
    this.#attempt += 1;
    return jittered(nominal, jitter, random);
  }

  reset(): void {
    this.#attempt = 0;
  }
}
