// The stray sweep: any pod carrying this cluster's marker whose run no longer exists is deleted,
// and deleted again until a pod list made after the delete no longer shows it. Pods of live runs
// are their reconcile's business; pods without our cluster marker are never touched.
import type { Logger } from '../log.ts';
import { isRunpodError } from '../runpod/index.ts';
import type { Accounts } from './accounts.ts';

export interface SweeperOptions {
  accounts: Accounts;
  /** UIDs of the runs that exist now (the reflector's store). */
  liveRunUids: () => Set<string>;
  logger: Logger;
  intervalMs: number;
  /** A pod this young may belong to a run the store has not shown yet. */
  minAgeMs?: number;
  /** Told of each stray pod it deleted (metrics). */
  onDeleted?: () => void;
}

export class Sweeper {
  #options: SweeperOptions;
  #timer: NodeJS.Timeout | undefined;
  /** Pod id → when we last sent its delete. */
  #deleted = new Map<string, number>();
  /** stop() aborts a sweep in progress: no delete starts after it. */
  #stop = new AbortController();

  constructor(options: SweeperOptions) {
    this.#options = options;
  }

  start(): void {
    this.#stop = new AbortController();
    this.#timer = setInterval(() => void this.sweep(), this.#options.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#stop.abort(new Error('sweeper stopped'));
  }

  /** One pass over every account's last pod list; returns the ids it deleted. */
  async sweep(): Promise<string[]> {
    const live = this.#options.liveRunUids();
    const minAgeMs = this.#options.minAgeMs ?? 120_000;
    const deleted: string[] = [];
    const listed = new Set<string>();
    const signal = this.#stop.signal;
    for (const account of this.#options.accounts.all()) {
      const snapshot = account.observer.snapshot;
      if (!snapshot) continue;
      for (const pods of snapshot.byRun.values()) for (const pod of pods) listed.add(pod.id);
      for (const [runUid, pods] of snapshot.byRun) {
        if (live.has(runUid)) continue;
        for (const pod of pods) {
          const age = snapshot.listedAt.getTime() - Date.parse(pod.createdAt ?? '');
          const sentAt = this.#deleted.get(pod.id);
          // Resend only when a list made after the last delete still shows the pod.
          if (age < minAgeMs || (sentAt !== undefined && sentAt > snapshot.listedAt.getTime())) continue;
          if (signal.aborted) return deleted;
          try {
            await account.client.deletePod(pod.id, { signal });
          } catch (error) {
            if (signal.aborted) return deleted;
            if (!isRunpodError(error, 'not-found')) {
              this.#options.logger.warn({ err: error, podId: pod.id }, 'deleting a stray pod failed; the next sweep tries again');
              continue;
            }
          }
          this.#deleted.set(pod.id, Date.now());
          this.#options.logger.warn({ podId: pod.id, podName: pod.name, runUid, account: account.id }, 'deleted a stray pod whose run no longer exists');
          deleted.push(pod.id);
          this.#options.onDeleted?.();
        }
      }
      account.observer.refreshSoon();
    }
    // A pod no list shows any more needs no memory of its delete.
    for (const podId of this.#deleted.keys()) if (!listed.has(podId)) this.#deleted.delete(podId);
    return deleted;
  }
}
