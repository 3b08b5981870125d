// One Runpod client and one pod observer per account (API key), shared by every run that uses it.
// An account nobody has asked about for a while is closed.
import { createHash } from 'node:crypto';
import type { Logger } from '../log.ts';
import { createRunpodClient, type RunpodCallObserver, type RunpodClient } from '../runpod/index.ts';
import { PodObserver } from '../runpod/observer.ts';

export interface Account { client: RunpodClient; observer: PodObserver; id: string }

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
  #accounts = new Map<string, Account>();
  #sweeper: NodeJS.Timeout;

  constructor(options: AccountsOptions) {
    this.#options = options;
    const idleMs = options.idleMs ?? 15 * 60_000;
    this.#sweeper = setInterval(() => this.#closeIdle(idleMs), Math.min(idleMs, 60_000));
    this.#sweeper.unref();
  }

  /** The account of this key; its id (a hash) is safe to log, the key never is. */
  get(apiKey: string): Account {
    const id = createHash('sha256').update(apiKey).digest('hex').slice(0, 12);
    let account = this.#accounts.get(id);
    if (!account) {
      const logger = this.#options.logger.child({ account: id });
      const client = createRunpodClient({ apiKey, baseUrl: this.#options.baseUrl, logger, observer: this.#options.runpodObserver });
      const observer = new PodObserver({
        client, clusterId: this.#options.clusterId, pollIntervalMs: this.#options.pollIntervalMs, logger,
        onChange: this.#options.onPodsChanged,
      });
      observer.start();
      account = { client, observer, id };
      this.#accounts.set(id, account);
    }
    account.observer.lastUsed = Date.now();
    return account;
  }

  all(): Account[] {
    return [...this.#accounts.values()];
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    for (const [id, account] of this.#accounts) await this.#close(id, account);
  }

  #closeIdle(idleMs: number): void {
    for (const [id, account] of this.#accounts) {
      if (Date.now() - account.observer.lastUsed > idleMs) void this.#close(id, account);
    }
  }

  async #close(id: string, account: Account): Promise<void> {
    this.#accounts.delete(id);
    account.observer.stop();
    await account.client.close();
  }
}
