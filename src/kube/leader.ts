// Leader election on a coordination.k8s.io/v1 Lease with client-go's semantics
// (tools/leaderelection): candidates retry every RetryPeriod (jittered); the leader renews every
// RetryPeriod and gives up if no renewal succeeded within RenewDeadline; someone else's lease counts
// as live for LeaseDuration after WE last saw it change (see leader-record.ts). A leader that reads
// another holder in the Lease stops leading at once (it does not wait out its renew deadline). A graceful stop
// releases the lease (client-go's ReleaseOnCancel) so the next candidate takes over at once: a
// candidate watches the Lease and tries as soon as it shows no holder.
import { CoordinationV1Api, type KubeConfig, type KubernetesObject, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import { jittered } from './backoff.ts';
import { realClock, sleep, type Clock } from './clock.ts';
import { describeError, isNotFound } from './errors.ts';
import { decide, jitterFactor, released, sameRecord, validateTimings, type LeaderRecord } from './leader-record.ts';
import { microNow, recordOf, specOf } from './lease-spec.ts';
import { Reflector } from './reflector.ts';
import { requestOptions } from './request-options.ts';

export interface LeaderElectorOptions {
  kubeConfig: KubeConfig;
  logger: Logger;
  namespace: string;
  name: string;
  /** Unique per process (e.g. pod name + pid). */
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  /** Hand the lease back on stop() (default true). */
  releaseOnCancel?: boolean;
  /**
   * Starts the leader's work; the signal aborts when leadership ends. Leadership lasts until stop() or
   * loss, whatever this returns; a returned promise makes stop() wait for it (renewing) before the release.
   */
  onStartedLeading: (signal: AbortSignal) => void | Promise<void>;
  /** Leadership was LOST (not renewed in time, or taken). Not called after a graceful stop(). */
  onStoppedLeading?: () => void;
  /** The observed holder changed (including to us). */
  onNewLeader?: (identity: string) => void;
  clock?: Clock;
  random?: () => number;
  /**
   * Watch the Lease while campaigning and try at once when its holder releases it (default true), so a
   * graceful hand-over takes a round trip instead of up to RetryPeriod x 2.2. Needs list+watch on leases;
   * polling every RetryPeriod still decides everything (the watch only wakes it).
   */
  watchRelease?: boolean;
}

type Outcome = 'lost' | 'stopped';

export class LeaderElector {
  readonly #opts: LeaderElectorOptions;
  readonly #api: CoordinationV1Api;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #stop = new AbortController();
  #observed: LeaderRecord | undefined;
  #observedAt = 0;
  #lease: V1Lease | undefined;
  #leading = false;
  #running: Promise<void> | undefined;

  constructor(opts: LeaderElectorOptions) {
    this.#opts = opts;
    this.#leaseDurationMs = opts.leaseDurationMs ?? 15_000;
    this.#renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.#retryPeriodMs = opts.retryPeriodMs ?? 2_000;
    validateTimings({ leaseDurationMs: this.#leaseDurationMs, renewDeadlineMs: this.#renewDeadlineMs, retryPeriodMs: this.#retryPeriodMs });
    this.#api = opts.kubeConfig.makeApiClient(CoordinationV1Api);
    this.#log = opts.logger.child({ lease: `${opts.namespace}/${opts.name}`, identity: opts.identity });
    this.#clock = opts.clock ?? realClock;
    this.#random = opts.random ?? Math.random;
  }

  /** Campaigns in the background until stop() or until leadership is lost (then it does not campaign again). */
  start(): void {
    if (this.#running) throw new Error('leader elector already started');
    this.#running = this.#run().catch((err: unknown) => {
      this.#log.error({ err: describeError(err) }, 'leader election failed');
    });
  }

  /** Stops campaigning; if leading, ends the work (awaiting it), then releases the lease. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#running;
  }

  isLeader(): boolean {
    return this.#leading;
  }

  /** The holder we last observed ('' when the lease is free, undefined before the first read). */
  leader(): string | undefined {
    return this.#observed?.holderIdentity;
  }

  async #run(): Promise<void> {
    if (!(await this.#acquire())) return;
    if (this.#stop.signal.aborted) {
      // Acquired by a request that was in flight when stop() came: hand it straight back.
      if (this.#opts.releaseOnCancel ?? true) await this.#release();
      return;
    }
    this.#leading = true;
    this.#log.info('became leader');
    const lead = new AbortController();
    const work = Promise.resolve()
      .then(() => this.#opts.onStartedLeading(lead.signal))
      .catch((err: unknown) => this.#log.error({ err: describeError(err) }, 'leader work failed'));
    const onStop = (): void => lead.abort(new Error('leader elector stopped'));
    this.#stop.signal.addEventListener('abort', onStop, { once: true });

    // Leadership is kept until stop() (or loss); the work's promise only holds the release back
    // until the work has wound down, and the lease is renewed meanwhile.
    const stopRequested = new Promise<void>((resolve) => {
      if (this.#stop.signal.aborted) resolve();
      else this.#stop.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    let workDone = false;
    const settled = Promise.all([stopRequested, work]).then(() => {
      workDone = true;
    });
    const outcome = await this.#renewUntil(() => workDone, settled);
    this.#stop.signal.removeEventListener('abort', onStop);
    lead.abort(new Error(outcome === 'lost' ? 'leadership lost' : 'leader elector stopped'));
    this.#leading = false;
    if (outcome === 'lost') {
      this.#log.error('leadership lost');
      this.#opts.onStoppedLeading?.();
      return;
    }
    if (this.#opts.releaseOnCancel ?? true) await this.#release();
    this.#log.info('stopped leading');
  }

  /** Tries every RetryPeriod (x up to 2.2 with jitter) until we hold the lease; false if stopped first. */
  async #acquire(): Promise<boolean> {
    const stopped = this.#stop.signal;
    this.#log.info('campaigning for the leader lease');
    let wake = new AbortController();
    const watcher = (this.#opts.watchRelease ?? true) ? this.#watchForRelease(() => wake.abort()) : undefined;
    try {
      while (!stopped.aborted) {
        if ((await this.#tryAcquireOrRenew(this.#renewDeadlineMs)) === true) return true;
        if (!wake.signal.aborted) {
          await sleep(this.#clock, jittered(this.#retryPeriodMs, jitterFactor, this.#random), AbortSignal.any([stopped, wake.signal]));
        }
        wake = new AbortController();
      }
      return false;
    } finally {
      await watcher?.stop();
    }
  }

  /** A watch on our one Lease that calls `released` whenever it shows no holder. */
  #watchForRelease(released: () => void): Reflector<V1Lease & KubernetesObject> {
    const { namespace, name } = this.#opts;
    const onLease = (lease: V1Lease): void => {
      if (!lease.spec?.holderIdentity) released();
    };
    const reflector = new Reflector<V1Lease & KubernetesObject>({
      kubeConfig: this.#opts.kubeConfig, log: this.#log.child({ component: 'lease-watch' }),
      path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, fieldSelector: `metadata.name=${name}`,
      handlers: { onAdd: onLease, onUpdate: (_old, lease) => onLease(lease) },
    });
    reflector.start();
    return reflector;
  }

  /** Renews every RetryPeriod; each renewal may retry until RenewDeadline. Ends when lost, or once stopped and the work is done. */
  async #renewUntil(workDone: () => boolean, settled: Promise<void>): Promise<Outcome> {
    for (;;) {
      const deadline = this.#clock.now() + this.#renewDeadlineMs;
      let renewed = false;
      while (!renewed) {
        const left = deadline - this.#clock.now();
        if (left <= 0) break;
        const attempt = await this.#tryAcquireOrRenew(left);
        // Someone else holds it now: we stop at once rather than keep trying until the renew deadline.
        if (attempt === 'taken') return 'lost';
        renewed = attempt;
        if (!renewed) await sleep(this.#clock, Math.min(this.#retryPeriodMs, Math.max(0, deadline - this.#clock.now())));
      }
      if (!renewed) return 'lost';
      if (workDone()) return 'stopped';
      // Sleep until the next renewal, waking early if the work ends (a stop() in progress).
      const wake = new AbortController();
      void settled.then(() => wake.abort());
      await sleep(this.#clock, this.#retryPeriodMs, wake.signal);
      wake.abort();
      if (workDone()) return 'stopped';
    }
  }

  /** true: we hold the lease now; 'taken': another live holder is recorded; false: not this time. */
  async #tryAcquireOrRenew(timeoutMs: number): Promise<boolean | 'taken'> {
    const { namespace, name, identity } = this.#opts;
    const options = requestOptions({ timeoutMs });
    const leaseDurationSeconds = Math.ceil(this.#leaseDurationMs / 1000);
    let lease: V1Lease;
    try {
      lease = await this.#api.readNamespacedLease({ namespace, name }, options);
    } catch (err) {
      if (!isNotFound(err)) {
        this.#log.warn({ err: describeError(err) }, 'cannot read the lease');
        return false;
      }
      const now = microNow();
      const record: LeaderRecord = { holderIdentity: identity, leaseDurationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 };
      try {
        this.#lease = await this.#api.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec: specOf(record) } }, options);
      } catch (createErr) {
        this.#log.debug({ err: describeError(createErr) }, 'lease create lost (someone else created it first)');
        return false;
      }
      this.#see(recordOf(this.#lease));
      return true;
    }

    const current = recordOf(lease);
    if (!sameRecord(current, this.#observed)) this.#see(current);
    const decision = decide({ identity, current, observedAt: this.#observedAt, now: this.#clock.now(), leaseDurationSeconds, wallNow: microNow() });
    if (decision.action === 'wait') return 'taken';
    try {
      // PUT with the resourceVersion just read: two candidates racing for an expired lease get one 409.
      this.#lease = await this.#api.replaceNamespacedLease({ namespace, name, body: { ...lease, spec: { ...lease.spec, ...specOf(decision.record) } } }, options);
    } catch (err) {
      this.#log.debug({ err: describeError(err) }, decision.transition ? 'lease take-over failed' : 'lease renewal failed');
      return false;
    }
    this.#see(recordOf(this.#lease));
    return true;
  }

  #see(record: LeaderRecord): void {
    const previousHolder = this.#observed?.holderIdentity;
    this.#observed = record;
    this.#observedAt = this.#clock.now();
    if (record.holderIdentity !== previousHolder && record.holderIdentity !== '') {
      this.#log.info({ holder: record.holderIdentity }, 'new leader observed');
      this.#opts.onNewLeader?.(record.holderIdentity);
    }
  }

  /** Hands the lease back (holder '', 1 s duration), only if it is still ours. */
  async #release(): Promise<void> {
    const { namespace, name, identity } = this.#opts;
    try {
      const lease = await this.#api.readNamespacedLease({ namespace, name }, requestOptions({ timeoutMs: this.#renewDeadlineMs }));
      const current = recordOf(lease);
      if (current.holderIdentity !== identity) return;
      await this.#api.replaceNamespacedLease(
        { namespace, name, body: { ...lease, spec: { ...lease.spec, ...specOf(released(current, microNow())) } } },
        requestOptions({ timeoutMs: this.#renewDeadlineMs }),
      );
      this.#log.info('released the leader lease');
    } catch (err) {
      this.#log.warn({ err: describeError(err) }, 'could not release the lease; it will expire');
    }
  }
}
