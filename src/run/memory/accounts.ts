// One Runpod client per account (API key), shared by every run that uses it, and one pod observer
// per account in use. An account nobody has asked about for a while stops being observed, but it is
// never forgotten: the sweeper still lists it for strays (a finished run's account may have them).
import { createHash } from 'node:crypto';
import { realClock, type Clock } from '../../kube/clock.ts';
import type { Logger } from '../../log.ts';
import { createRunpodClient, type Pod, type RunpodCallObserver, type RunpodClient } from '../../runpod/index.ts';
import { PodObserver } from '../../runpod/observer.ts';
import { runOfPod } from '../ownership.ts';
import { SpendRoom } from './spend-room.ts';

export interface Account { client: RunpodClient; observer: PodObserver; id: string; spendRoom: SpendRoom }

/** An account as the sweeper needs it: no observer. */
export interface KnownAccount { client: RunpodClient; id: string }

export interface AccountsOptions {
  baseUrl: string;
  clusterId: string;
  pollIntervalMs: number;
  logger: Logger;
  onPodsChanged: (runUids: string[]) => void;
  idleMs?: number;
  /** Shared by every account's client (metrics). */
  runpodObserver?: RunpodCallObserver;
  /** Measures how long an account's observer went unused. */
  clock?: Clock;
}

/** An account's id: a hash of its key, safe to log (the key never is). */
export const accountIdOf = (apiKey: string): string => createHash('sha256').update(apiKey).digest('hex').slice(0, 12);

export class Accounts {
  #options: AccountsOptions;
  #known = new Map<string, KnownAccount>();
  #observed = new Map<string, PodObserver>();
  #spendRooms = new Map<string, SpendRoom>();
  /** When each observed account was last used (clock time), by account id. */
  #lastUsed = new Map<string, number>();
  readonly #clock: Clock;
  /**
   * The key each run last read from its Secret, by run UID, so that deleting the run can still
   * delete its pods when the Secret went first (namespace deletion, `kubectl delete -f dir/`).
   * Memory only: a copy written anywhere (the owned <run>-ssh Secret) would be one more place the
   * key lives, stale after a rotation, and gone anyway when a namespace is deleted.
   */
  #runKeys = new Map<string, string>();
  #idleTimer: NodeJS.Timeout;

  constructor(options: AccountsOptions) {
    this.#options = options;
    this.#clock = options.clock ?? realClock;
    const idleMs = options.idleMs ?? 15 * 60_000;
    this.#idleTimer = setInterval(() => this.#stopIdle(idleMs), Math.min(idleMs, 60_000));
    this.#idleTimer.unref();
  }

  /** The account of this key, observed; its id (a hash) is safe to log, the key never is. */
  get(apiKey: string): Account {
    const known = this.remember(apiKey);
    let observer = this.#observed.get(known.id);
    if (!observer) {
      observer = new PodObserver({
        client: known.client, runOf: runOfPod(this.#options.clusterId), pollIntervalMs: this.#options.pollIntervalMs,
        logger: this.#options.logger.child({ account: known.id }), onChange: this.#options.onPodsChanged,
      });
      observer.start();
      this.#observed.set(known.id, observer);
    }
    this.#lastUsed.set(known.id, this.#clock.now());
    let spendRoom = this.#spendRooms.get(known.id);
    if (!spendRoom) this.#spendRooms.set(known.id, (spendRoom = new SpendRoom()));
    return { ...known, observer, spendRoom };
  }

  /** The account of this key, without observing it (the sweeper lists it itself). */
  remember(apiKey: string): KnownAccount {
    const id = accountIdOf(apiKey);
    let known = this.#known.get(id);
    if (!known) {
      known = { id, client: createRunpodClient({ apiKey, baseUrl: this.#options.baseUrl, logger: this.#options.logger.child({ account: id }), observer: this.#options.runpodObserver }) };
      this.#known.set(id, known);
    }
    return known;
  }

  /** A full pod list of account `id` taken by the sweeper: the account's observer, if it is in use, takes it too. */
  offerList(id: string, listedAt: Date, pods: Pod[]): void {
    this.#observed.get(id)?.offer(listedAt, pods);
  }

  /** The pod observers of the accounts in use now. */
  observers(): PodObserver[] {
    return [...this.#observed.values()];
  }

  /** Remembers the key a run read from its Secret (for its cleanup after the Secret is gone). */
  rememberRunKey(runUid: string, apiKey: string): void {
    this.#runKeys.set(runUid, apiKey);
  }

  /** The key the run last read, if this process saw one. */
  runKey(runUid: string): string | undefined {
    return this.#runKeys.get(runUid);
  }

  /** The run is gone (its finalizer removed): its key is no longer kept for it. */
  forgetRun(runUid: string): void {
    this.#runKeys.delete(runUid);
  }

  /** Every account any run referenced since this process started, observed or not. */
  known(): KnownAccount[] {
    return [...this.#known.values()];
  }

  async close(): Promise<void> {
    clearInterval(this.#idleTimer);
    for (const observer of this.#observed.values()) observer.stop();
    this.#observed.clear();
    this.#lastUsed.clear();
    for (const { client } of this.#known.values()) await client.close();
    this.#known.clear();
    this.#runKeys.clear();
  }

  #stopIdle(idleMs: number): void {
    for (const [id, observer] of this.#observed) {
      if (this.#clock.now() - (this.#lastUsed.get(id) ?? 0) > idleMs) {
        observer.stop();
        this.#observed.delete(id);
        this.#lastUsed.delete(id);
      }
    }
  }
}
