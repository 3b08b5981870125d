// One Runpod client per account (API key), shared by every run that uses it, and one pod observer
// per account in use. An account nobody has asked about for a while stops being observed, but it is
// never forgotten: the sweeper still lists it for strays (a finished run's account may have them).
import { createHash } from 'node:crypto';
import type { Logger } from '../log.ts';
import { createRunpodClient, type RunpodCallObserver, type RunpodClient } from '../runpod/index.ts';
import { PodObserver } from '../runpod/observer.ts';

export interface Account { client: RunpodClient; observer: PodObserver; id: string }

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
}

export class Accounts {
  #options: AccountsOptions;
  #known = new Map<string, KnownAccount>();
  #observed = new Map<string, PodObserver>();
  #idleTimer: NodeJS.Timeout;

  constructor(options: AccountsOptions) {
    this.#options = options;
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
        client: known.client, clusterId: this.#options.clusterId, pollIntervalMs: this.#options.pollIntervalMs,
        logger: this.#options.logger.child({ account: known.id }), onChange: this.#options.onPodsChanged,
      });
      observer.start();
      this.#observed.set(known.id, observer);
    }
    observer.lastUsed = Date.now();
    return { ...known, observer };
  }

  /** The account of this key, without observing it (the sweeper lists it itself). */
  remember(apiKey: string): KnownAccount {
    const id = createHash('sha256').update(apiKey).digest('hex').slice(0, 12);
    let known = this.#known.get(id);
    if (!known) {
      known = { id, client: createRunpodClient({ apiKey, baseUrl: this.#options.baseUrl, logger: this.#options.logger.child({ account: id }), observer: this.#options.runpodObserver }) };
      this.#known.set(id, known);
    }
    return known;
  }

  /** The pod observers of the accounts in use now. */
  observers(): PodObserver[] {
    return [...this.#observed.values()];
  }

  /** Every account any run referenced since this process started, observed or not. */
  known(): KnownAccount[] {
    return [...this.#known.values()];
  }

  async close(): Promise<void> {
    clearInterval(this.#idleTimer);
    for (const observer of this.#observed.values()) observer.stop();
    this.#observed.clear();
    for (const { client } of this.#known.values()) await client.close();
    this.#known.clear();
  }

  #stopIdle(idleMs: number): void {
    for (const [id, observer] of this.#observed) {
      if (Date.now() - observer.lastUsed > idleMs) {
        observer.stop();
        this.#observed.delete(id);
      }
    }
  }
}
