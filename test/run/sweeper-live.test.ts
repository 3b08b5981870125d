// The stray sweep never acts on a view of the runs older than the pod list it judges, against a
// real kube-apiserver (RunApi.liveRunUids) and the simulator: a pass lists its accounts one after
// the other (a 429 on a delete alone can hold it for a minute), so a run that the API server did
// not have when the pass first read the runs may own a pod the next account's list shows. Ends
// with the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { createLogger } from '../../src/log.ts';
import { POD_ENV } from '../../src/pod/protocol.ts';
import { Accounts } from '../../src/run/accounts.ts';
import { installScope } from '../../src/run/ownership.ts';
import { RunApi } from '../../src/run/run-api.ts';
import { Sweeper } from '../../src/run/sweeper.ts';
import { createRunpodClient, type RunpodClient } from '../../src/runpod/index.ts';
import { assertNoLeaks, simPods } from '../runpod-sim/client.ts';
import { startSimulator } from '../runpod-sim/server.ts';
import { rpr, testRun } from '../kube/helpers.ts';
import { createTestNamespace, testCluster } from '../support/cluster.ts';

const keyA = 'rpa_SWEEPER_LIVE_KEY_A_0123456789';
const keyB = 'rpa_SWEEPER_LIVE_KEY_B_0123456789';
const graceMs = 200;

test('a run created while a sweep is under way keeps the pod a later account lists: the runs are read after each list', async () => {
  const { kubeConfig } = await testCluster();
  const namespace = await createTestNamespace('sweeper-live');
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const runs = new RunApi(kubeConfig);
  const sim = await startSimulator({ apiKeys: [keyA, keyB] });
  const accounts = new Accounts({ baseUrl: sim.baseUrl, clusterId: 'cluster-a', pollIntervalMs: 1000, logger: createLogger('silent'), onPodsChanged: () => {} });
  const clientA = createRunpodClient({ apiKey: keyA, baseUrl: sim.baseUrl, logger: createLogger('silent') });
  const clientB = createRunpodClient({ apiKey: keyB, baseUrl: sim.baseUrl, logger: createLogger('silent') });
  const scope = installScope(namespace);
  const create = (client: RunpodClient, name: string, runUid: string) => client.createPod({
    name, image: 'img', gpu: { id: 'NVIDIA A40', count: 1 }, args: 'sleep 600',
    env: { [POD_ENV.cluster]: 'cluster-a', [POD_ENV.scope]: scope, [POD_ENV.run]: runUid },
  });
  try {
    const orphan = await create(clientA, 'gone-1', 'uid-gone');
    await delay(graceMs * 2);
    let fresh: { id: string } | undefined;
    let liveReads = 0;
    const sweeper = new Sweeper({
      accounts, logger: createLogger('silent'), intervalMs: 60_000, graceMs,
      owner: { clusterId: 'cluster-a', scope },
      // The reflector has shown neither run: the cache is never the reason to keep or delete.
      cachedRunUids: () => new Set(),
      liveRunUids: async () => {
        const uids = await runs.liveRunUids(namespace);
        if (++liveReads === 1) {
          // Right after the pass first read the runs: a run is applied, the controller creates its
          // pod in the other account, and the pod grows older than the grace (minutes, in life).
          const run = (await objects.createNamespacedCustomObject({ ...rpr, namespace, body: testRun(namespace, 'fresh') })) as { metadata: { uid: string } };
          fresh = await create(clientB, 'fresh-1', run.metadata.uid);
          await delay(graceMs * 2);
        }
        return uids;
      },
      referencedApiKeys: () => Promise.resolve([keyA, keyB]),
    });

    const deleted = await sweeper.sweep();
    assert.ok(fresh, 'the run and its pod were created during the pass');
    assert.deepEqual(deleted, [orphan.id], 'only the pod of the run that is gone');
    const pods = await simPods(sim.adminUrl);
    assert.equal(pods.find((pod) => pod.id === orphan.id)?.deletedBy, 'account');
    assert.equal(pods.find((pod) => pod.id === fresh?.id)?.deletedAt, null, 'the live run\'s pod is never a stray');
    assert.equal(liveReads, 2, 'one live read of the runs per account with candidates, each after that account\'s list');
  } finally {
    for (const pod of await simPods(sim.adminUrl)) if (!pod.deletedAt) await (pod.name.startsWith('fresh') ? clientB : clientA).deletePod(pod.id);
    await accounts.close();
    await clientA.close();
    await clientB.close();
    await assertNoLeaks(sim.adminUrl, 5000).finally(() => sim.stop());
  }
});
