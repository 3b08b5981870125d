// What the v2 API and the admin API share: state, the real pods, faults, quotas and counters.
import type { Socket } from 'node:net';
import type { Logger } from '../../src/log.ts';
import type { SimConfig } from './config.ts';
import { FaultQueue } from './faults.ts';
import { PodCursors } from './paging.ts';
import { PodLog } from './podlog.ts';
import { RealPod, type PodHostContext } from './pods.ts';
import { pullRefusal, RefusedPull } from './pull.ts';
import { RateLimiter } from './ratelimit.ts';
import { SimResources } from './resources.ts';
import { SimState, type DeletedBy, type PodRecord } from './state.ts';
import { RequestStats } from './stats.ts';

export class SimCore {
  readonly state: SimState;
  readonly faults = new FaultQueue();
  readonly limiter: RateLimiter;
  readonly stats = new RequestStats();
  readonly cursors: PodCursors;
  readonly pods = new Map<string, RealPod>();
  /** Network volumes and registry credentials. */
  readonly resources: SimResources;
  /** Pods whose private image is refused (pull.ts): no RealPod, only the tries in the system log. */
  private readonly pulls = new Map<string, RefusedPull>();
  /** Every pod's log lines (GET /v2/pods/{id}/logs), by pod id: kept after a delete, closed then. */
  private readonly logs = new Map<string, PodLog>();
  /** Sockets of requests held open by the create-timeout fault. */
  readonly held = new Set<Socket>();
  readonly log: Logger;
  private readonly host: PodHostContext;

  constructor(config: SimConfig, accountKeys: readonly string[], host: PodHostContext, log: Logger) {
    this.state = new SimState(config, accountKeys);
    this.resources = new SimResources(config);
    this.limiter = new RateLimiter(config.rateLimits);
    this.cursors = new PodCursors(config.pods.cursorTtlMs);
    this.host = host;
    this.log = log;
  }

  get config(): SimConfig {
    return this.state.config;
  }

  /** The pod's log (created with its first line). */
  podLog(podId: string): PodLog {
    let log = this.logs.get(podId);
    if (!log) {
      log = new PodLog(this.config.pods.logLines);
      this.logs.set(podId, log);
    }
    return log;
  }

  /** Where network volumes live on this machine (one directory per volume id, pods.ts). */
  get volumesDir(): string {
    return this.host.volumesDir;
  }

  /**
   * Starts a real pod for a new record; the API answers without waiting for it to boot. A private
   * image without its credential starts none: the pull is refused, and tried again, until a stop or delete.
   */
  boot(record: PodRecord): RealPod | undefined {
    this.pulls.get(record.id)?.stop();
    this.pulls.delete(record.id);
    const refusal = pullRefusal(this.config, this.resources, record);
    if (refusal !== null) {
      const pull = new RefusedPull(record, this.podLog(record.id), refusal, this.config.timings.pullBackoffMs);
      this.pulls.set(record.id, pull);
      pull.start();
      return undefined;
    }
    const pod = new RealPod(record, this.host, this.podLog(record.id));
    this.pods.set(record.id, pod);
    pod.boot().catch((error: unknown) => this.log.error({ err: error, podId: record.id }, 'pod boot failed'));
    return pod;
  }

  /** Gone from the API at once; resolves when no process of the pod is left. */
  async deletePod(record: PodRecord, by: DeletedBy): Promise<void> {
    const log = this.podLog(record.id);
    // A vanished pod's host stopped answering: nothing narrates its end, its streams just close.
    if (by !== 'vanished') log.system('Terminating pod');
    this.state.markDeleted(record, by);
    this.pulls.get(record.id)?.stop();
    this.log.debug({ podId: record.id, by }, 'pod deleted');
    try {
      await this.pods.get(record.id)?.destroy();
    } finally {
      log.close();
    }
  }

  /**
   * The container ends on its own, `times` times (each after the previous restart came up). RUNNING:
   * restarted by Runpod with new ports; EXITED / ERROR: left so, its GPUs back in stock, its disk kept.
   */
  async containerExit(record: PodRecord, status: 'RUNNING' | 'EXITED' | 'ERROR', times = 1): Promise<void> {
    const pod = this.pods.get(record.id);
    if (!pod || record.deletedAt !== null) return;
    if (status !== 'RUNNING') {
      record.status = status;
      this.state.releaseStock(record);
      await pod.stopContainer();
      return;
    }
    for (let i = 0; i < times && record.deletedAt === null; i++) await pod.exitOnItsOwn();
  }

  async stopAll(): Promise<void> {
    for (const socket of this.held) socket.destroy();
    this.held.clear();
    // Log streams stay open forever otherwise: they end with the simulator, first.
    for (const log of this.logs.values()) log.close();
    for (const pull of this.pulls.values()) pull.stop();
    await Promise.all([...this.pods.values()].map((pod) => pod.destroy()));
    // Deleted pods' namespaces with processes left were held for the leak check; it is over.
    for (const pod of this.pods.values()) pod.unpinNetNamespace();
  }
}
