// What one reconcile call reads of the run's namespace (its Runpod key, its SSH Secret, the job's
// inputs), read once for all of the call's passes: reconciler.ts goes on from a preparing step to the
// step it prepares, and a new run's set-up read each Secret once per pass, three times over, while
// every other new run waited for the same API server. What a read depends on is in its name (the
// spec's generation), and the one read a pass's own step changes (the SSH Secret, by ensureSshKeys)
// is answered by that step's write. The next call reads afresh: a changed Secret is seen at the next reconcile.
export class CallReads {
  readonly #kept = new Map<string, Promise<unknown>>();

  once<T>(what: string, read: () => Promise<T>): Promise<T> {
    const kept = this.#kept.get(what) as Promise<T> | undefined;
    if (kept) return kept;
    const reading = read();
    this.#kept.set(what, reading);
    return reading;
  }

  /** What a read would now answer, known from the call's own write: kept in place of the earlier read. */
  answer<T>(what: string, value: T): void {
    this.#kept.set(what, Promise.resolve(value));
  }
}
