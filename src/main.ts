// Entry point: config → wiring → run. Only the leader (a Lease) runs the queue, the pod observers
// and the sweeper; a lost lease ends the process so that a fresh start re-observes everything.
import { hostname } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import { CoreV1Api, KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { group, parseSpec, plural, version, type RunpodRun } from './api/runpodrun.ts';
import { loadConfig, type Config } from './config.ts';
import { Controller } from './kube/controller.ts';
import { EventRecorder } from './kube/events.ts';
import { keyOf } from './kube/keys.ts';
import { LeaderElector } from './kube/leader.ts';
import { Reflector, resourcePath } from './kube/reflector.ts';
import { createLogger, registerSecret, type Logger } from './log.ts';
import { Accounts } from './run/accounts.ts';
import { installScope, type Owner } from './run/ownership.ts';
import { RunReconciler } from './run/reconciler.ts';
import { Sweeper } from './run/sweeper.ts';

export interface RunningController { stop(): Promise<void> }

function loadKubeConfig(config: Config): KubeConfig {
  const kubeConfig = new KubeConfig();
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
}

/**
 * Our own status writes come back as updates; every step already requeues itself, so only a periodic
 * resync (the same object again) or a change made by someone else needs a reconcile now.
 */
function needsReconcile(old: RunpodRun, run: RunpodRun): boolean {
  const userVisible = (r: RunpodRun) => [r.metadata.generation, r.metadata.deletionTimestamp, r.metadata.finalizers, r.metadata.annotations];
  return old === run || !isDeepStrictEqual(userVisible(old), userVisible(run));
}

/** The API key of every run in the store (finished ones too), each credentials Secret read once. */
async function referencedApiKeys(runs: RunpodRun[], reconciler: RunReconciler): Promise<string[]> {
  const refs = new Map<string, { namespace: string; secretName: string; key: string }>();
  for (const run of runs) {
    const verdict = parseSpec(run.spec);
    if (!verdict.ok) continue;
    const { secretName, key } = verdict.spec.credentials;
    refs.set(JSON.stringify([run.metadata.namespace, secretName, key]), { namespace: run.metadata.namespace, secretName, key });
  }
  const keys: string[] = [];
  for (const ref of refs.values()) {
    const apiKey = await reconciler.runs.secretValue(ref.namespace, ref.secretName, ref.key).catch(() => undefined);
    registerSecret(apiKey);
    if (apiKey) keys.push(apiKey);
  }
  return keys;
}

/** Bounded: a memory for events, not a record. */
function rememberDeleted(deletedRuns: Map<string, RunpodRun>, run: RunpodRun): void {
  deletedRuns.set(run.metadata.uid, run);
  for (const uid of deletedRuns.keys()) if (deletedRuns.size > 1000) deletedRuns.delete(uid);
}

/** Starts the controller; resolves once it runs (as leader, or waiting to become one). */
export async function startController(config: Config, options: StartOptions = {}): Promise<RunningController> {
  const logger = options.logger ?? createLogger(config.logLevel);
  const kubeConfig = loadKubeConfig(config);
  const clusterId = config.clusterId ?? (await kubeConfig.makeApiClient(CoreV1Api).readNamespace({ name: 'kube-system' })).metadata?.uid;
  if (!clusterId) throw new Error('cannot determine the cluster id: set --cluster-id');
  const identity = `${hostname()}-${process.pid}`;
  const owner: Owner = { clusterId, scope: installScope(config.namespace) };
  logger.info({ clusterId, scope: owner.scope, namespace: config.namespace ?? '(all)', runpodApiUrl: config.runpodApiUrl }, 'starting runpod-operator');

  let controller: Controller | undefined;
  let reflector: Reflector<RunpodRun & KubernetesObject> | undefined;
  const runUids = new Map<string, string>();
  /** Runs deleted while we watched, so a stray pod they left can be an event on them. */
  const deletedRuns = new Map<string, RunpodRun>();
  const accounts = new Accounts({
    baseUrl: config.runpodApiUrl, clusterId, pollIntervalMs: config.pollInterval, logger,
    onPodsChanged: (uids) => uids.forEach((uid) => { const key = runUids.get(uid); if (key) controller?.enqueue(key); }),
  });
  const events = new EventRecorder({ kubeConfig, logger, reportingInstance: identity });
  const reconciler = new RunReconciler({
    kubeConfig, accounts, clusterId, scope: owner.scope, runpodApiUrl: options.podApiUrl ?? config.runpodApiUrl, resultsDir: config.resultsDir, watchdogPeriodMs: config.watchdogPeriod, logger,
    events,
    settings: { ambiguousLookupMs: 2 * config.pollInterval, deadlineMarginMs: config.deadlineMargin, goneLooks: 3, pollIntervalMs: config.pollInterval },
  });
  const sweeper = new Sweeper({
    accounts, owner, logger, intervalMs: config.sweepInterval, graceMs: config.strayGrace,
    cachedRunUids: () => new Set(runUids.keys()),
    liveRunUids: () => reconciler.runs.liveRunUids(config.namespace),
    referencedApiKeys: () => referencedApiKeys(reflector?.list() ?? [], reconciler),
    onConfirmed: (stray) => {
      const run = deletedRuns.get(stray.runUid);
      if (run) events.record(run, { type: 'Warning', reason: 'StrayPodDeleted', note: `pod ${stray.podName} (${stray.podId}) outlived this run; the sweeper deleted it (confirmed)` });
      deletedRuns.delete(stray.runUid);
    },
  });

  const lead = (signal: AbortSignal) => {
    controller = new Controller({
      name: 'runpodrun', log: logger, maxConcurrentReconciles: config.maxConcurrentReconciles,
      reconcile: (key) => reconciler.reconcile(key),
    });
    const enqueue = (run: RunpodRun & KubernetesObject) => controller?.enqueue(keyOf(run));
    reflector = new Reflector<RunpodRun & KubernetesObject>({
      kubeConfig, log: logger, resyncMs: 5 * 60_000,
      path: resourcePath({ group, version, plural, namespace: config.namespace }),
      handlers: {
        onAdd: (run) => { runUids.set(run.metadata.uid, keyOf(run)); enqueue(run); },
        onUpdate: (old, run) => { if (needsReconcile(old, run)) enqueue(run); },
        onDelete: (run) => { runUids.delete(run.metadata.uid); rememberDeleted(deletedRuns, run); enqueue(run); },
      },
    });
    reflector.start();
    controller.start();
    // The sweeper must not judge pods before the store knows every live run.
    void reflector.waitForSync(signal).then(() => sweeper.start(), () => undefined);
  };

  const stopWork = async () => {
    await sweeper.stop();
    await reflector?.stop();
    await controller?.stop();
    await accounts.close();
  };

  if (!config.leaderElect) {
    lead(new AbortController().signal);
    return { stop: stopWork };
  }
  const elector = new LeaderElector({
    kubeConfig, logger, identity,
    namespace: config.leaseNamespace ?? config.namespace ?? 'default',
    name: 'runpod-operator-leader',
    onStartedLeading: lead,
    onStoppedLeading: () => {
      logger.error('lost the leader lease; stopping');
      void stopWork();
      (options.onLostLeadership ?? (() => process.exit(1)))();
    },
  });
  elector.start();
  return { stop: async () => { await stopWork(); await elector.stop(); } };
}

if (import.meta.main) {
  let config: Config;
  try {
    config = loadConfig(process.argv.slice(2));
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(2);
  }
  const logger = createLogger(config.logLevel);
  const running = await startController(config, { logger });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      logger.info({ signal }, 'stopping');
      void running.stop().then(() => process.exit(0));
    });
  }
}
