// The sweep: a pod this install owns (cluster id and scope markers, see ownership.ts) is deleted when
// its run no longer exists (a stray) or when its own deadline marker plus --deadline-margin has
// passed, and deleted again until a pod list made after the delete no longer shows it (then the
// deletion is confirmed in the log). Otherwise pods of existing runs are their reconcile's business;
// pods this install does not own are never judged.
//
// The deadline is absolute for every pod, so it needs no read of the runs: a pod whose watchdog
// cannot act (its container died, or its key may not delete it) is deleted at the leader's first
// list, not when a long work queue reaches its run after a restart.
//
// It acts only on fresh evidence: its own pod list per account (not a shared snapshot, though the
// snapshot takes its list: runs need not wait for their observer's next poll), a pod older
// than the grace, and a live read of the runs made after that list (not the reflector's cache,
// which may lag behind a create it has not shown yet, nor an earlier account's read). It lists
// every account any run referenced, finished runs too.
//
// Accounts are swept side by side (a few at a time) and each on its own: one account's long
// Retry-After, unreachable answers or unusable key never hold back or stop another's sweep.
//
// An account whose list or delete failed is swept again within seconds (doubling up to the interval),
// not at the next interval: the pod it could not delete bills meanwhile, and its watchdog may be dead.
import { exponentialDelay } from '../kube/backoff.ts';
import type { Logger } from '../log.ts';
import { isRunpodError, type Pod } from '../runpod/index.ts';
import { accountIdOf, type Accounts, type KnownAccount } from './memory/accounts.ts';
import { ownsPod, type Owner } from './ownership.ts';
import { POD_ENV } from '../pod/protocol.ts';
import type { RegistrySweep } from './registry-sweep.ts';

export interface StrayPod { podId: string; podName: string; runUid: string; account: string }

/** Why a pod is deleted: its run is gone, or its own deadline (+ the margin) passed. */
type Condemned = StrayPod & { why: 'stray' | 'deadline' };

export interface SweeperOptions {
  accounts: Accounts;
  owner: Owner;
  /** UIDs of the runs in the reflector's store: a quick first filter, never the reason to delete. */
  cachedRunUids: () => Set<string>;
  /** UIDs of every run in this install's scope as the API server has them now (a live list). */
  liveRunUids: () => Promise<Set<string>>;
  /** The API keys the runs in scope reference (finished runs too), so their accounts are swept even after a restart. */
  referencedApiKeys?: () => Promise<string[]>;
  /** A stray's delete was confirmed (a newer list no longer shows it). */
  onConfirmed?: (stray: StrayPod) => void;
  logger: Logger;
  intervalMs: number;
  /** --deadline-margin: a pod this long past its RUNPOD_OPERATOR_DEADLINE is deleted, its run alive or not. */
  deadlineMarginMs: number;
  /** A pod this young may belong to a run the API server has not shown yet. */
  graceMs?: number;
  /** Told of each pod it deleted (metrics). */
  onDeleted?: (why: Condemned['why']) => void;
  /** How many accounts are swept at once (default 4). */
  concurrentAccounts?: number;
  /** This install's registry credentials, swept after each account's pods (registry-sweep.ts). */
  registries?: RegistrySweep;
}

interface SentDelete { pod: Condemned; sentAt: number }

/** One account's sweep: what it deleted, and whether a list or a delete failed (so it is swept again soon). */
interface AccountSweep { deleted: string[]; failed: boolean }

/** The first retry of an account whose sweep failed comes this soon; each further failure doubles it. */
const retryBaseMs = 2000;

export class Sweeper {
  #options: SweeperOptions;
  #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<string[]> | undefined;
  /** Pod id → its delete, until a newer list confirms it. */
  #sent = new Map<string, SentDelete>();
  /** stop() aborts a sweep in progress: no delete starts after it, and the lists under way end. */
  #stop = new AbortController();
  /** Accounts whose key cannot be used, by account id: said once, not at every pass. */
  #unusable = new Set<string>();
  /** Per account id: its sweep under way, so a retry never overlaps a pass's sweep of it. */
  #accountSweeps = new Map<string, Promise<AccountSweep>>();
  /** Per account id: failed sweeps in a row and the timer of its next try (only while started). */
  #retries = new Map<string, { failures: number; timer?: NodeJS.Timeout }>();
  #started = false;

  constructor(options: SweeperOptions) {
    this.#options = options;
  }

  /** Sweeps at once (leader start), then every interval. */
  start(): void {
    this.#stop = new AbortController();
    this.#started = true;
    void this.#sweepLogged();
    this.#timer = setInterval(() => void this.#sweepLogged(), this.#options.intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#started = false;
    for (const retry of this.#retries.values()) clearTimeout(retry.timer);
    this.#retries.clear();
    this.#stop.abort(new Error('sweeper stopped'));
    await this.#sweeping?.catch(() => undefined);
  }

  /** One pass over every known account; returns the ids it sent a delete for. Passes never overlap. */
  sweep(): Promise<string[]> {
    this.#sweeping ??= this.#pass().finally(() => { this.#sweeping = undefined; });
    return this.#sweeping;
  }

  async #sweepLogged(): Promise<void> {
    await this.sweep().catch((error: unknown) => this.#options.logger.warn({ err: error }, 'the stray sweep failed; the next one tries again'));
  }

  async #pass(): Promise<string[]> {
    for (const apiKey of await this.#options.referencedApiKeys?.() ?? []) this.#remember(apiKey);
    const deleted: string[] = [];
    const pending = [...this.#options.accounts.known()];
    const worker = async (): Promise<void> => {
      for (let account = pending.shift(); account && !this.#stop.signal.aborted; account = pending.shift()) {
        deleted.push(...(await this.#sweepOnce(account)).deleted);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.#options.concurrentAccounts ?? 4) }, worker));
    return deleted;
  }

  /** A key no client can be made for (it cannot travel in a header) is skipped; its runs say why in their status. */
  #remember(apiKey: string): void {
    try {
      this.#options.accounts.remember(apiKey);
    } catch (error) {
      const account = accountIdOf(apiKey);
      if (this.#unusable.has(account)) return;
      this.#unusable.add(account);
      this.#options.logger.warn({ account, err: error }, 'a Runpod API key a run references cannot be used; its account is not swept (the run\'s status names the Secret)');
    }
  }

  /** An account's sweep, joined when one is under way; a failure schedules the next try. */
  #sweepOnce(account: KnownAccount): Promise<AccountSweep> {
    let sweeping = this.#accountSweeps.get(account.id);
    if (!sweeping) {
      sweeping = this.#sweepAccount(account).finally(() => this.#accountSweeps.delete(account.id));
      this.#accountSweeps.set(account.id, sweeping);
      void sweeping.then(({ failed }) => this.#retryIfFailed(account, failed), () => this.#retryIfFailed(account, true));
    }
    return sweeping;
  }

  #retryIfFailed(account: KnownAccount, failed: boolean): void {
    const previous = this.#retries.get(account.id);
    clearTimeout(previous?.timer);
    if (!failed || !this.#started || this.#stop.signal.aborted) {
      this.#retries.delete(account.id);
      return;
    }
    const failures = (previous?.failures ?? 0) + 1;
    const afterMs = exponentialDelay(retryBaseMs, this.#options.intervalMs, failures - 1);
    const timer = setTimeout(() => void this.#sweepOnce(account).catch((error: unknown) =>
      this.#options.logger.warn({ err: error, account: account.id }, 'the stray sweep of this account failed')), afterMs);
    timer.unref();
    this.#retries.set(account.id, { failures, timer });
    this.#options.logger.info({ account: account.id, failures, afterMs }, `this account's sweep met a failure; it is swept again in ${Math.round(afterMs / 1000)}s`);
  }

  /** One account's list, confirmations and deletes; its failures stay its own. */
  async #sweepAccount(account: KnownAccount): Promise<AccountSweep> {
    const listed = await this.#listOwned(account);
    if (!listed) return { deleted: [], failed: !this.#stop.signal.aborted };
    this.#confirm(account, listed);
    const sweep = await this.#sweepPods(account, listed);
    // Pods first: they bill; a credential does not.
    const registriesFailed = await this.#options.registries?.sweep(account.id, account.client, this.#stop.signal) ?? false;
    return { deleted: sweep.deleted, failed: sweep.failed || registriesFailed };
  }

  async #sweepPods(account: KnownAccount, listed: { at: number; pods: Pod[] }): Promise<AccountSweep> {
    const { logger } = this.#options;
    const condemned = this.#candidates(account, listed);
    if (condemned.length === 0) return { deleted: [], failed: false };
    // Read after this account's list, never reused for another: a pass can last minutes (429
    // waits), and a run created meanwhile may own a pod a later list shows. Every candidate here
    // was listed before this read, so its run (older than its pod) is in it unless it is gone.
    const sweep: AccountSweep = { deleted: [], failed: false };
    let live = new Set<string>();
    if (condemned.some((pod) => pod.why === 'stray')) {
      try {
        live = await this.#options.liveRunUids();
      } catch (error) {
        logger.warn({ err: error, account: account.id }, 'reading the runs for the stray sweep failed; only pods past their deadline are deleted this time');
        condemned.splice(0, condemned.length, ...condemned.filter((pod) => pod.why === 'deadline'));
        sweep.failed = true;
      }
    }
    for (const pod of condemned) {
      if (pod.why === 'stray' && live.has(pod.runUid)) continue;
      const { signal } = this.#stop;
      if (signal.aborted) return sweep;
      try {
        await account.client.deletePod(pod.podId, { signal });
      } catch (error) {
        if (signal.aborted) return sweep;
        if (!isRunpodError(error, 'not-found')) {
          logger.warn({ err: error, ...pod }, 'deleting a pod in the sweep failed');
          sweep.failed = true;
          continue;
        }
      }
      this.#sent.set(pod.podId, { pod, sentAt: Date.now() });
      logger.warn(pod, pod.why === 'stray'
        ? 'deleted a stray pod whose run no longer exists; waiting for a newer list to confirm'
        : 'deleted a pod past its deadline (RUNPOD_OPERATOR_DEADLINE + --deadline-margin); waiting for a newer list to confirm');
      sweep.deleted.push(pod.podId);
      this.#options.onDeleted?.(pod.why);
    }
    return sweep;
  }

  async #listOwned(account: KnownAccount): Promise<{ at: number; pods: Pod[] } | undefined> {
    // Wall time, not the injected clock: the grace compares it with Runpod's createdAt.
    const at = Date.now();
    try {
      const pods = await account.client.listPods({ signal: this.#stop.signal });
      this.#options.accounts.offerList(account.id, new Date(at), pods);
      return { at, pods: pods.filter((pod) => ownsPod(this.#options.owner, pod.env)) };
    } catch (error) {
      if (this.#stop.signal.aborted) return undefined;
      this.#options.logger.warn({ err: error, account: account.id }, 'listing pods for the stray sweep failed');
      return undefined;
    }
  }

  /** A list begun after the delete that no longer shows the pod confirms it. */
  #confirm(account: KnownAccount, listed: { at: number; pods: Pod[] }): void {
    const ids = new Set(listed.pods.map((pod) => pod.id));
    for (const [podId, sent] of this.#sent) {
      if (sent.pod.account !== account.id || ids.has(podId) || sent.sentAt > listed.at) continue;
      this.#sent.delete(podId);
      this.#options.logger.warn(sent.pod, 'swept pod deletion confirmed: no longer listed');
      this.#options.onConfirmed?.(sent.pod);
    }
  }

  /** Deadline-condemned pods first: they bill now and need no read of the runs. */
  #candidates(account: KnownAccount, listed: { at: number; pods: Pod[] }): Condemned[] {
    const cached = this.#options.cachedRunUids();
    const graceMs = this.#options.graceMs ?? 120_000;
    const condemned: Condemned[] = [];
    for (const pod of listed.pods) {
      const runUid = pod.env[POD_ENV.run];
      if (!runUid) continue;
      const sent = this.#sent.get(pod.id);
      // Resend only when a list begun after the last delete still shows the pod.
      if (sent && sent.sentAt > listed.at) continue;
      const why = this.#pastDeadline(pod, listed.at) ? 'deadline'
        : !cached.has(runUid) && this.#olderThan(pod, listed.at, graceMs) ? 'stray' : undefined;
      if (why) condemned.push({ podId: pod.id, podName: pod.name, runUid, account: account.id, why });
    }
    return condemned.sort((a, b) => Number(b.why === 'deadline') - Number(a.why === 'deadline'));
  }

  /** The pod's own deadline (unix seconds, as its watchdog reads it) plus the margin is behind the list. */
  #pastDeadline(pod: Pod, listedAt: number): boolean {
    const marker = pod.env[POD_ENV.deadline] ?? '';
    return /^\d+$/.test(marker) && listedAt > Number(marker) * 1000 + this.#options.deadlineMarginMs;
  }

  /** No creation time, no judgement: the age is what proves the run had time to show up. */
  #olderThan(pod: Pod, listedAt: number, graceMs: number): boolean {
    const created = Date.parse(pod.createdAt ?? '');
    return Number.isFinite(created) && listedAt - created >= graceMs;
  }
}
