// One pod list per account per poll interval, shared by every run of that account: runs read their
// pods from the last snapshot instead of each asking Runpod (v2 allows ~60 calls a minute). A list
// another caller took of the same account (the sweeper's) is offered to it too.
import type { Logger } from '../log.ts';
import type { RunpodClient } from './client.ts';
import { systemClock, type Clock, type TimerHandle } from './clock.ts';
import { isRunpodError } from './errors.ts';
import type { Pod } from './schemas.ts';


export interface PodSnapshot {
  listedAt: Date;
  /** Pods carrying this cluster's marker, by the run UID of their marker. */
  byRun: Map<string, Pod[]>;
  /**
   * USD per hour of every pod of the account that runs or boots (ours or not): what Runpod checks
   * its spend limit against when a pod starts. Pods without a cost count as 0.
   */
  runningUsdPerHour: number;
}

/** Statuses that hold GPUs and count against the spend limit (UNKNOWN too: better to wait than to storm). */
const SPENDING = new Set(['PROVISIONING', 'STARTING', 'RUNNING', 'UNKNOWN']);

export interface PodObserverOptions {
  client: RunpodClient;
  /** The run a pod belongs to (by its markers; the caller knows them), or undefined: not ours, whatever its name. */
  runOf: (pod: Pod) => string | undefined;
  pollIntervalMs: number;
  logger: Logger;
  /** Called with the run UIDs whose pods changed (appeared, went, or changed state or endpoint). */
  onChange: (runUids: string[]) => void;
  /** Schedules the lists (tests pin it). */
  clock?: Clock;
  /** When refused lists (401/403) confirm the refusal: this many in a row, the first and the last this far apart (default 3 over a minute). */
  refusalConfirmation?: { lists: number; spanMs: number };
}

/**
 * Pod lists Runpod refused (401/403) in a row, with no accepted list between. One refusal is evidence,
 * not a verdict (a fresh observer after a restart, a failover or a key rotation may meet a blip); a
 * refusal is confirmed once several lists over a while met it.
 */
export interface RefusedLists { lists: number; since: Date; confirmed: boolean }

export class PodObserver {
  #options: PodObserverOptions;
  #snapshot: PodSnapshot | undefined;
  #timer: TimerHandle | undefined;
  readonly #clock: Clock;
  /** When the next list is due (clock time), while one is scheduled. */
  #dueAt: number | undefined;
  #refreshAfterPoll = false;
  #stopped = false;
  #polling: Promise<void> | undefined;
  #rejected = false;
  #forbidden: string | undefined;
  /** The refused lists in a row (clock times of the first and the last), until a list is accepted. */
  #refusals: { count: number; firstAt: number; lastAt: number } | undefined;

  constructor(options: PodObserverOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
  }

  get snapshot(): PodSnapshot | undefined {
    return this.#snapshot;
  }

  /** Runpod answered the last list with 401: the key is not (or no longer) valid. */
  get rejected(): boolean {
    return this.#rejected;
  }

  /** Runpod refused the last list with a 403 (the key lacks the scope to read pods): what it said. */
  get forbidden(): string | undefined {
    return this.#forbidden;
  }

  /** The lists refused in a row since the last accepted one, or undefined when the last list was accepted. */
  get refused(): RefusedLists | undefined {
    const refusals = this.#refusals;
    if (!refusals) return undefined;
    const { lists, spanMs } = this.#options.refusalConfirmation ?? { lists: 3, spanMs: 60_000 };
    return { lists: refusals.count, since: new Date(refusals.firstAt), confirmed: refusals.count >= lists && refusals.lastAt - refusals.firstAt >= spanMs };
  }

  start(): void {
    void this.#poll();
  }

  /**
   * A full list of the account that another caller took (the sweeper's, at a leader's start): the runs
   * need not wait for this observer's next poll, which 429s may hold back for many seconds.
   */
  offer(listedAt: Date, pods: Pod[]): void {
    if (!this.#stopped) this.#publish(listedAt, pods);
  }

  stop(): void {
    this.#stopped = true;
    this.#clearTimer();
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
  }

  /**
   * Lists again soon (after a create, a delete): never sooner than a fifth of the interval, and never
   * later than a list already due. A burst of calls (many runs creating at once) brings the next list
   * closer, never pushes it away: the first call of a burst fixes the time.
   */
  refreshSoon(): void {
    if (this.#stopped) return;
    // A list in flight began before whatever asks now: the next one comes soon after it.
    if (this.#polling) { this.#refreshAfterPoll = true; return; }
    const at = this.#clock.now() + Math.max(1000, this.#options.pollIntervalMs / 5);
    if (this.#dueAt !== undefined && this.#dueAt <= at) return;
    this.#schedule(at - this.#clock.now());
  }

  #schedule(afterMs: number): void {
    this.#clearTimer();
    this.#dueAt = this.#clock.now() + afterMs;
    this.#timer = this.#clock.setTimer(() => void this.#poll(), afterMs);
  }

  async #poll(): Promise<void> {
    if (this.#stopped) return;
    this.#dueAt = undefined;
    const run = async () => {
      try {
        const startedAt = new Date();
        this.#publish(startedAt, await this.#options.client.listPods());
      } catch (error) {
        this.#rejected = isRunpodError(error, 'unauthorized');
        this.#forbidden = isRunpodError(error, 'forbidden') ? error.message : undefined;
        if (this.#rejected || this.#forbidden !== undefined) {
          // Other failures (5xx, no answer) neither count nor break the row: they say nothing of the key.
          const at = this.#clock.now();
          this.#refusals = { count: (this.#refusals?.count ?? 0) + 1, firstAt: this.#refusals?.firstAt ?? at, lastAt: at };
        }
        this.#options.logger.warn({ err: error, refusedInARow: this.#refusals?.count }, 'listing pods failed; keeping the last snapshot');
      }
    };
    this.#polling = run();
    await this.#polling;
    this.#polling = undefined;
    if (this.#stopped) return;
    // Jitter keeps many controllers (and accounts) from polling in lockstep.
    const jitter = 0.8 + Math.random() * 0.4;
    const soon = this.#refreshAfterPoll ? Math.max(1000, this.#options.pollIntervalMs / 5) : Infinity;
    this.#refreshAfterPoll = false;
    this.#schedule(Math.min(soon, this.#options.pollIntervalMs * jitter));
  }

  #publish(listedAt: Date, pods: Pod[]): void {
    this.#rejected = false;
    this.#forbidden = undefined;
    this.#refusals = undefined;
    // Lists may overlap (an offered one, a poll begun before it): the snapshot never goes back in time.
    if (this.#snapshot && listedAt < this.#snapshot.listedAt) return;
    const byRun = new Map<string, Pod[]>();
    for (const pod of pods) {
      const uid = this.#options.runOf(pod);
      if (!uid) continue;
      byRun.set(uid, [...(byRun.get(uid) ?? []), pod]);
    }
    const changed = new Set<string>();
    const before = this.#snapshot?.byRun ?? new Map<string, Pod[]>();
    for (const uid of new Set([...before.keys(), ...byRun.keys()])) {
      if (fingerprint(before.get(uid)) !== fingerprint(byRun.get(uid))) changed.add(uid);
    }
    // The listing time itself is evidence decide() uses (absence after a create or a delete).
    const runningUsdPerHour = pods.filter((pod) => SPENDING.has(pod.status)).reduce((sum, pod) => sum + (pod.cost ?? 0), 0);
    this.#snapshot = { listedAt, byRun, runningUsdPerHour };
    if (changed.size > 0) this.#options.onChange([...changed]);
  }
}

function fingerprint(pods: Pod[] | undefined): string {
  return (pods ?? []).map((p) => `${p.id}:${p.status}:${p.ssh?.direct?.host ?? ''}:${p.ssh?.direct?.port ?? ''}`).sort().join(',');
}
