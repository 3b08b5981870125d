// The ready keys of a WorkQueue: the highest priority first, first in first out within one (as in
// controller-runtime's priority queue). A waiting key added again at a higher priority moves up; at a
// lower one it stays where it is. With one priority this is a plain FIFO.

interface Level {
  keys: string[];
  /** The next entry to look at: no O(n) shifts. */
  head: number;
}

export class PriorityFifo {
  readonly #levels = new Map<number, Level>();
  /** The priorities that have a level, highest first. */
  #order: number[] = [];
  /** Each waiting key's priority; an entry at another level is one it has since moved up from. */
  readonly #waiting = new Map<string, number>();

  get size(): number {
    return this.#waiting.size;
  }

  /** Queues `key` at `priority`, or raises it there; a no-op if it waits at that priority or higher. */
  push(key: string, priority: number): void {
    const current = this.#waiting.get(key);
    if (current !== undefined && current >= priority) return;
    this.#waiting.set(key, priority);
    let level = this.#levels.get(priority);
    if (!level) {
      level = { keys: [], head: 0 };
      this.#levels.set(priority, level);
      this.#order = [...this.#levels.keys()].sort((a, b) => b - a);
    }
    level.keys.push(key);
  }

  pop(): string | undefined {
    for (const priority of this.#order) {
      const level = this.#levels.get(priority) as Level;
      while (level.head < level.keys.length) {
        const key = level.keys[level.head] as string;
        level.head += 1;
        if (this.#waiting.get(key) !== priority) continue;
        this.#waiting.delete(key);
        compact(level);
        return key;
      }
      compact(level);
    }
    return undefined;
  }
}

function compact(level: Level): void {
  if (level.head === level.keys.length) {
    level.keys = [];
    level.head = 0;
  } else if (level.head > 1024 && level.head * 2 > level.keys.length) {
    level.keys = level.keys.slice(level.head);
    level.head = 0;
  }
}
