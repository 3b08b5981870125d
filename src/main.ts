// Entry point: config → wiring → run. Only the leader (a Lease) runs the queue, the pod observers
// and the sweeper; a lost lease aborts every in-flight reconcile at once and ends the process so that
// a fresh start re-observes everything. SIGTERM stops the same way, then releases the lease.
import { hostname } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import type { KubeConfig} from '@kubernetes/client-node';
import { CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { PooledKubeConfig } from './kube/kubeconfig.ts';
import { group, plural, version, type RunpodRun } from './api/runpodrun.ts';
import { usage } from './config-help.ts';
import { stopOnSignals } from './shutdown.ts';
import { describeError } from './kube/errors.ts';
import { loadConfig, resultsStoreOf, type Config } from './config.ts';
import { Controller } from './kube/controller.ts';
import { EventRecorder } from './kube/events.ts';
import { keyOf } from './kube/keys.ts';
import { LeaderElector } from './kube/leader.ts';
import { Reflector, resourcePath } from './kube/reflector.ts';
import { healthRoutes, type HealthSources } from './health/probes.ts';
import { endpointUrl, startEndpoint } from './http/endpoint.ts';
import { createLogger, type Logger } from './log.ts';
import { OperatorMetrics } from './metrics/metrics.ts';
import type { S3Defaults } from './results/s3-settings.ts';
import { removeAbandonedStaging } from './results/store.ts';
import { isTerminal } from './run/decide/conditions.ts';
import { Accounts } from './run/memory/accounts.ts';
import { installScope, type Owner } from './run/ownership.ts';
import { referencedApiKeys } from './run/account-keys.ts';
import { RunReconciler } from './run/reconciler.ts';
import { Sweeper } from './run/sweeper.ts';
import { RegistrySweep } from './run/registry-sweep.ts';
import { defaultTimings, type Timings } from './run/decide/timings.ts';
import { urgencyOf } from './run/urgency.ts';
import { TransferPool } from './run/act/transfers.ts';
import { PodConnections } from './run/ports/pod-connections.ts';
import type { RetrievalOutcome } from './run/decide/decide.ts';

export interface RunningController {
  /** Graceful: stop taking work, abort in-flight steps, flush events, release the lease, close the endpoints. */
  stop(): Promise<void>;
  isLeader(): boolean;
  /** `http://host:port` of the endpoints, when enabled. */
  metricsUrl?: string | undefined;
  healthUrl?: string | undefined;
}

function loadKubeConfig(config: Config): KubeConfig {
  const kubeConfig = new PooledKubeConfig();
  if (config.kubeconfig) kubeConfig.loadFromFile(config.kubeconfig);
  else if (process.env.KUBERNETES_SERVICE_HOST) kubeConfig.loadFromCluster();
  else kubeConfig.loadFromDefault();
  return kubeConfig;
}

export interface StartOptions {
  logger?: Logger;
  /** Leadership was lost: the process must not go on working (default: exit 1, so a fresh start re-observes all). */
  onLostLeadership?: () => void;
  /**
   * The Runpod API URL written into pods for their watchdog (default: config.runpodApiUrl). Differs
   * only when the controller reaches Runpod through something pods cannot reach (a test's validating
   * proxy in front of the simulator).
   */
  podApiUrl?: string;
  /** The run loop's waits and bounds (default: decide/timings.ts): a test's world compresses them. */
  timings?: Partial<Timings>;
}

/** Our own status writes come back as updates, and every step requeues itself: only others' changes need a reconcile now. */
function changedByOthers(old: RunpodRun, run: RunpodRun): boolean {
  const userVisible = (r: RunpodRun) => [r.metadata.generation, r.metadata.deletionTimestamp, r.metadata.finalizers, r.metadata.annotations];
  return !isDeepStrictEqual(userVisible(old), userVisible(run));
}

const resyncMs = 5 * 60_000;

/** Bounded: a memory for events, not a record. */
function rememberDeleted(deletedRuns: Map<string, RunpodRun>, run: RunpodRun): void {
  deletedRuns.set(run.metadata.uid, run);
  for (const uid of deletedRuns.keys()) if (deletedRuns.size > 1000) deletedRuns.delete(uid);
}

const aborted = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));

/** Starts the controller; resolves once it runs (as leader, or waiting to become one). */
export async function startController(config: Config, options: StartOptions = {}): Promise<RunningController> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const kubeConfig = loadKubeConfig(config);
  const clusterId = config.clusterId ?? (await kubeConfig.makeApiClient(CoreV1Api).readNamespace({ name: 'kube-system' })).metadata?.uid;
  if (!clusterId) throw new Error('cannot determine the cluster id: set --cluster-id');
  const identity = `${hostname()}-${process.pid}`;
  const owner: Owner = { clusterId, scope: installScope(config.namespace, config.selector) };
  logger.info({ clusterId, scope: owner.scope, namespace: config.namespace ?? '(all)', runpodApiUrl: config.runpodApiUrl, identity }, 'starting runpod-operator');

  const metrics = new OperatorMetrics();
  let controller: Controller | undefined;
  let reflector: Reflector<RunpodRun & KubernetesObject> | undefined;
  let transfers: TransferPool<RetrievalOutcome> | undefined;
  let connections: PodConnections | undefined;
  // Set once leader election starts (after the endpoints); the probes and metrics read it before that.
  const election: { elector?: LeaderElector } = {};
  const runUids = new Map<string, string>();
  /** Runs deleted while we watched, so a stray pod they left can be an event on them. */
  const deletedRuns = new Map<string, RunpodRun>();
  const accounts = new Accounts({
    baseUrl: config.runpodApiUrl, clusterId, pollIntervalMs: config.pollInterval, logger, runpodObserver: metrics.runpod,
    onPodsChanged: (uids) => uids.forEach((uid) => { const key = runUids.get(uid); if (key) controller?.enqueue(key); }),
  });
  const events = new EventRecorder({ kubeConfig, logger, reportingInstance: identity });
  const defaultStore = resultsStoreOf(config);
  const s3Defaults: S3Defaults | undefined = defaultStore.kind === 's3'
    ? { bucket: defaultStore.bucket, prefix: defaultStore.prefix, endpoint: config.resultsS3Endpoint, region: config.resultsS3Region, forcePathStyle: config.resultsS3ForcePathStyle }
    : undefined;
  const reconciler = new RunReconciler({
    kubeConfig, accounts, clusterId, scope: owner.scope, runpodApiUrl: options.podApiUrl ?? config.runpodApiUrl, resultsDir: defaultStore.kind === 'dir' ? defaultStore.dir : config.resultsDir, s3Defaults,
    s3AllowedBuckets: config.resultsS3AllowedBuckets, watchdogPeriodMs: config.watchdogPeriod, logger,
    events, metrics,
    settings: { ambiguousLookupMs: 2 * config.pollInterval, deadlineMarginMs: config.deadlineMargin, goneLooks: 3, pollIntervalMs: config.pollInterval,
      timings: { ...defaultTimings, ...options.timings } },
  });
  const unusableKeys = { said: new Set<string>(), logger };
  const sweeper = new Sweeper({
    accounts, owner, logger, intervalMs: config.sweepInterval, graceMs: config.strayGrace, deadlineMarginMs: config.deadlineMargin,
    cachedRunUids: () => new Set(runUids.keys()),
    liveRunUids: () => reconciler.runs.liveRunUids(config.namespace),
    registries: new RegistrySweep({ owner, inUse: () => reconciler.runs.registriesInUse(config.namespace), graceMs: config.strayGrace, logger }),
    referencedApiKeys: () => referencedApiKeys(reflector?.list() ?? [], reconciler.runs, unusableKeys),
    onConfirmed: (stray) => {
      const run = deletedRuns.get(stray.runUid);
      if (run) events.record(run, { type: 'Warning', reason: 'StrayPodDeleted', note: `pod ${stray.podName} (${stray.podId}) outlived this run; the sweeper deleted it (confirmed)` });
      deletedRuns.delete(stray.runUid);
    },
    onDeleted: (why) => metrics.sweptPodDeleted(why),
  });
  const isLeader = (): boolean => (config.leaderElect ? election.elector?.isLeader() ?? false : controller !== undefined);

  metrics.setSources({
    isLeader,
    controllers: () => (controller ? [controller] : []),
    runs: () => (reflector?.list() ?? []).map((run) => ({ namespace: run.metadata.namespace, status: run.status })),
    pods: () => accounts.observers().flatMap((observer) => [...(observer.snapshot?.byRun.values() ?? [])].flat()).map((pod) => ({ status: pod.status })),
  });
  const health: HealthSources = {
    // A transfer runs outside the reconciles: one that stopped moving fails /healthz like a stuck reconcile.
    inFlight: () => [...(controller?.inFlight() ?? []), ...(transfers?.inFlight() ?? [])].sort((a, b) => b.runningMs - a.runningMs),
    stuckAfterMs: config.reconcileStuckAfter,
    ready: () => {
      if (isLeader()) return reflector?.hasSynced() ? { ok: true, role: 'leader' } : { ok: false, role: 'leader', detail: 'caches not synced yet' };
      if (config.leaderElect && election.elector?.leader() !== undefined) return { ok: true, role: 'standby' };
      return { ok: false, role: 'starting', detail: 'the leader lease has not been read yet' };
    },
  };

  const metricsEndpoint = config.metricsBindAddress && await startEndpoint('metrics', config.metricsBindAddress, {
    '/metrics': async () => {
      const { contentType, body } = await metrics.expose();
      return { status: 200, body, contentType };
    },
  }, logger);
  const healthEndpoint = config.healthProbeBindAddress
    && await startEndpoint('health probes', config.healthProbeBindAddress, healthRoutes(health), logger).catch(async (error: unknown) => {
      await metricsEndpoint?.close();
      throw error;
    });

  /**
   * Before any worker could start a retrieval: what a killed leader staged stays for the runs that may
   * still retrieve (they resume it); the rest goes.
   */
  const removeStagingNoRetrievalResumes = async (): Promise<void> => {
    const resumable = (uid: string): boolean => {
      const key = runUids.get(uid);
      const run = key === undefined ? undefined : reflector?.get(key);
      return run !== undefined && !isTerminal(run.status?.phase);
    };
    const removed = await removeAbandonedStaging(defaultStore.kind === 'dir' ? defaultStore.dir : config.resultsDir, resumable).catch((error: unknown) => {
      logger.warn({ err: error }, 'could not clean up abandoned partial results');
      return [];
    });
    if (removed.length > 0) logger.info({ removed }, 'removed partial results no retrieval will resume');
  };

  /** Everything the leader runs; returns once `signal` aborted and the work has wound down. */
  const lead = async (signal: AbortSignal): Promise<void> => {
    // One per term: a retrieval never outlives the leadership it started under.
    transfers = new TransferPool<RetrievalOutcome>({ maxConcurrent: config.maxConcurrentTransfers, onSettled: (key) => controller?.enqueue(key) });
    const pool = transfers;
    connections = new PodConnections({ idleMs: Math.max(120_000, 4 * config.pollInterval) });
    const kept = connections;
    controller = new Controller({
      name: 'runpodrun', log: logger, maxConcurrentReconciles: config.maxConcurrentReconciles,
      observer: metrics.controllerObserver('runpodrun'), queueObserver: metrics.queueObserver('runpodrun'),
      reconcile: (key, ctx) => reconciler.reconcile(key, { signal: ctx.signal, progress: ctx.progress, log: ctx.log, transfers: pool, connections: kept }),
      priorityOf: (key) => urgencyOf(reflector?.get(key), new Date()),
    });
    const enqueue = (run: RunpodRun & KubernetesObject) => controller?.enqueue(keyOf(run));
    reflector = new Reflector<RunpodRun & KubernetesObject>({
      kubeConfig, log: logger, resyncMs,
      path: resourcePath({ group, version, plural, namespace: config.namespace }),
      ...(config.selector ? { labelSelector: config.selector } : {}), // a shard's runs; sweeps read every run
      handlers: {
        onAdd: (run) => { runUids.set(run.metadata.uid, keyOf(run)); enqueue(run); },
        onUpdate: (old, run) => { if (old === run) controller?.resync(keyOf(run), resyncMs); else if (changedByOthers(old, run)) enqueue(run); },
        onDelete: (run) => { runUids.delete(run.metadata.uid); rememberDeleted(deletedRuns, run); enqueue(run); },
      },
    });
    reflector.start();
    // As controller-runtime does, workers start once the cache has synced: the first list has queued
    // every run by urgency, so none of them takes a run merely because its name sorts first. The
    // sweeper must not judge pods before the store knows every live run.
    const thisTerm = controller;
    void reflector.waitForSync(signal).then(async () => {
      await removeStagingNoRetrievalResumes();
      if (signal.aborted) return;
      thisTerm.start();
      sweeper.start();
    }, () => undefined);
    await aborted(signal);
    await stopWork();
  };

  /** Stops acting at once: no new key, in-flight reconciles aborted (their intent is already in status). */
  const stopWork = async (): Promise<void> => {
    await sweeper.stop();
    await Promise.all([reflector?.stop(), controller?.stop({ abort: true }), transfers?.abortAll('the controller is stopping')]);
    connections?.closeAll();
    await accounts.close();
    await events.flush();
  };
  const closeEndpoints = async (): Promise<void> => { await Promise.all([metricsEndpoint?.close(), healthEndpoint?.close()]); };
  const endpoints = { metricsUrl: endpointUrl(metricsEndpoint), healthUrl: endpointUrl(healthEndpoint) };

  if (!config.leaderElect) {
    const stop = new AbortController();
    const work = lead(stop.signal);
    return {
      ...endpoints, isLeader,
      stop: async () => {
        stop.abort();
        await work;
        await events.close();
        await closeEndpoints();
      },
    };
  }
  let work: Promise<void> = Promise.resolve();
  const elector = new LeaderElector({
    kubeConfig, logger, identity,
    namespace: config.leaseNamespace ?? config.namespace ?? 'default',
    name: config.leaderElectionId,
    leaseDurationMs: config.leaderElectLeaseDuration,
    renewDeadlineMs: config.leaderElectRenewDeadline,
    retryPeriodMs: config.leaderElectRetryPeriod,
    onStartedLeading: (signal) => (work = lead(signal)),
    onStoppedLeading: () => {
      // The signal has aborted every reconcile already; the process must not go on as if it led.
      logger.error('lost the leader lease; stopping');
      const onLost = options.onLostLeadership ?? (() => process.exit(1));
      const bound = new Promise<void>((resolve) => setTimeout(resolve, config.shutdownTimeout).unref());
      void Promise.race([work, bound]).then(closeEndpoints).finally(onLost);
    },
  });
  election.elector = elector;
  elector.start();
  return {
    ...endpoints, isLeader,
    stop: async () => {
      await elector.stop();
      await work;
      await events.close();
      await closeEndpoints();
    },
  };
}

if (import.meta.main) {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage());
    process.exit(0);
  }
  let config: Config;
  try {
    config = loadConfig(argv);
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(2);
  }
  const logger = createLogger(config.logLevel);
  // What stops the start (a kubeconfig without a context, a port in use) is said in one line, not a trace.
  const running = await startController(config, { logger }).catch((error: unknown) => {
    logger.fatal({ err: error }, 'the controller could not start');
    console.error(`runpod-operator: cannot start: ${describeError(error)}`);
    process.exit(1);
  });
  stopOnSignals(running, config.shutdownTimeout, logger);
}
