// Time is injected so that queues, backoffs and the leader elector can be tested without sleeping.
// `now()` is monotonic (performance.now): durations must not jump when the wall clock is adjusted.
//
// The rule for the whole of src/:
// - What measures a duration or schedules work within this process (queues, backoffs, leases, the
//   in-flight ages, idle observers, the pod observer's lists) takes a Clock (this one;
//   src/runpod, which knows no runtime, takes the same shape from src/runpod/clock.ts).
// - Wall-clock times that are written down or compared with times from elsewhere (status ISO times,
//   Runpod's createdAt, a pod list's listedAt, the sweeper's list time, the pod's unix times) are wall
//   time (a Date, or Date.now() where only compared with one): taken where they are written
//   or, for a run's reconcile, from the reconciler's one now() (its `now`
//   option): the observation's time and every time act records come from there.
// - An id that only needs to be unique (an event name's suffix) may read Date.now().

export type TimerHandle = object | number;

export interface Clock {
  /** Monotonic milliseconds; only differences are meaningful. */
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export const realClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.max(0, ms)),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Resolves after `ms`, or at once (without rejecting) when the signal aborts. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      resolve();
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
