// A manual clock: timers fire only when a test advances time, in due order.
import type { Clock, TimerHandle } from '../../src/kube/clock.ts';

interface Timer {
  id: number;
  due: number;
  fn: () => void;
}

export class FakeClock implements Clock {
  #now = 0;
  #nextId = 1;
  #timers = new Map<number, Timer>();

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.#nextId++;
    this.#timers.set(id, { id, due: this.#now + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle as number);
  }

  pendingTimers(): number {
    return this.#timers.size;
  }

  /** Moves time forward, firing every timer that falls due on the way (each at its own due time). */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let next: Timer | undefined;
      for (const t of this.#timers.values()) if (t.due <= target && (!next || t.due < next.due || (t.due === next.due && t.id < next.id))) next = t;
      if (!next) break;
      this.#timers.delete(next.id);
      this.#now = Math.max(this.#now, next.due);
      next.fn();
    }
    this.#now = target;
  }
}

/** Lets every pending promise callback run (setImmediate comes after the whole microtask queue). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
