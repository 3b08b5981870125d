// The world of a test that drives a RunReconciler itself (no Controller, no queue), against a real
// kube-apiserver and the simulator: a namespace holding the account's Secret, the simulator, a Runpod
// client for the clean-up, a results directory, and reconcilers of one install. close() deletes the
// pods left and ends with the leak check.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { RunpodRun } from '../../src/api/runpodrun.ts';
import { createLogger } from '../../src/log.ts';
import { defaultTimings } from '../../src/run/decide/timings.ts';
import { Accounts } from '../../src/run/memory/accounts.ts';
import { installScope } from '../../src/run/ownership.ts';
import { RunReconciler } from '../../src/run/reconciler.ts';
import { createRunpodClient, type RunpodClient } from '../../src/runpod/index.ts';
import { assertNoLeaks, simPods } from '../runpod-sim/client.ts';
import { startSimulator, type RunningSimulator } from '../runpod-sim/server.ts';
import { rpr, testRun } from '../kube/helpers.ts';
import { createTestNamespace, testCluster } from '../support/cluster.ts';

export interface ReconcilerWorld {
  namespace: string;
  kubeConfig: KubeConfig;
  objects: CustomObjectsApi;
  core: CoreV1Api;
  sim: RunningSimulator;
  /** The account's own client, for what the test does to Runpod itself. */
  client: RunpodClient;
  /** A run of the account's Secret on an A40, 600 s at most, with this job (and results). */
  createRun(name: string, job: { job: object; results?: object }): Promise<RunpodRun>;
  get(name: string): Promise<RunpodRun>;
  /** A reconciler of the install, with its own account memory (as another replica would have). */
  reconciler(): { reconciler: RunReconciler; accounts: Accounts };
  close(): Promise<void>;
}

export async function reconcilerWorld(prefix: string, apiKey: string, timing: { pollIntervalMs: number; ambiguousLookupMs: number }): Promise<ReconcilerWorld> {
  const { kubeConfig } = await testCluster();
  const namespace = await createTestNamespace(prefix);
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({ namespace, body: { metadata: { name: 'runpod' }, stringData: { apiKey } } });
  const sim = await startSimulator({ apiKeys: [apiKey] });
  const client = createRunpodClient({ apiKey, baseUrl: sim.baseUrl, logger: createLogger('silent') });
  const resultsDir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  const made: Accounts[] = [];
  const { pollIntervalMs, ambiguousLookupMs } = timing;
  return {
    namespace, kubeConfig, objects, core, sim, client,
    async createRun(name, job) {
      const spec = { credentials: { secretName: 'runpod' }, image: 'runpod/base:0.6.2', gpu: { types: ['NVIDIA A40'] }, limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 60 }, ...job };
      return (await objects.createNamespacedCustomObject({ ...rpr, namespace, body: { ...testRun(namespace, name), spec } })) as RunpodRun;
    },
    get: async (name) => (await objects.getNamespacedCustomObject({ ...rpr, namespace, name })) as RunpodRun,
    reconciler() {
      const accounts = new Accounts({ baseUrl: sim.baseUrl, clusterId: 'cluster-a', pollIntervalMs, logger: createLogger('silent'), onPodsChanged: () => {} });
      made.push(accounts);
      const reconciler = new RunReconciler({
        kubeConfig, accounts, clusterId: 'cluster-a', scope: installScope(namespace), runpodApiUrl: sim.baseUrl, resultsDir, watchdogPeriodMs: 10_000,
        settings: { ambiguousLookupMs, deadlineMarginMs: 5000, goneLooks: 3, pollIntervalMs, timings: defaultTimings },
        events: { record: () => {} }, logger: createLogger('silent'),
      });
      return { reconciler, accounts };
    },
    async close() {
      try {
        for (const pod of await simPods(sim.adminUrl)) if (!pod.deletedAt) await client.deletePod(pod.id);
        for (const accounts of made) await accounts.close();
        await client.close();
        rmSync(resultsDir, { recursive: true, force: true });
      } finally {
        await assertNoLeaks(sim.adminUrl, 5000).finally(() => sim.stop());
      }
    },
  };
}
