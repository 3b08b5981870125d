// The stray sweep against the simulator: a pod with our cluster marker whose run is gone is deleted;
// a live run's pod and another cluster's pod are never touched. Ends with the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger } from '../../src/log.ts';
import { POD_ENV } from '../../src/pod/protocol.ts';
import { Accounts } from '../../src/run/accounts.ts';
import { Sweeper } from '../../src/run/sweeper.ts';
import { assertNoLeaks, simPods } from '../runpod-sim/client.ts';
import { startSimulator } from '../runpod-sim/server.ts';

const apiKey = 'rpa_SWEEPER_TEST_KEY_0123456789';

test('the sweeper deletes only pods of this cluster whose run no longer exists', async () => {
  const sim = await startSimulator({ apiKeys: [apiKey] });
  const accounts = new Accounts({ baseUrl: sim.baseUrl, clusterId: 'cluster-a', pollIntervalMs: 1000, logger: createLogger('silent'), onPodsChanged: () => {} });
  try {
    const { client } = accounts.get(apiKey);
    const create = (name: string, cluster: string, run: string) => client.createPod({
      name, image: 'img', gpu: { id: 'NVIDIA A40', count: 1 }, args: 'sleep 600',
      env: { [POD_ENV.cluster]: cluster, [POD_ENV.run]: run },
    });
    const orphan = await create('gone-1', 'cluster-a', 'uid-gone');
    const live = await create('live-1', 'cluster-a', 'uid-live');
    const foreign = await create('gone-1', 'cluster-b', 'uid-gone');
    const observer = accounts.get(apiKey).observer;
    while (!observer.snapshot?.byRun.has('uid-live')) await sleep(100);

    const sweeper = new Sweeper({ accounts, logger: createLogger('silent'), intervalMs: 60_000, minAgeMs: 0, liveRunUids: () => new Set(['uid-live']) });
    assert.deepEqual(await sweeper.sweep(), [orphan.id]);
    assert.deepEqual(await sweeper.sweep(), [], 'not resent before a newer list could show it gone');

    const pods = await simPods(sim.adminUrl);
    const byId = (id: string) => pods.find((pod) => pod.id === id);
    assert.equal(byId(orphan.id)?.deletedBy, 'account');
    assert.equal(byId(live.id)?.deletedAt, null, 'a live run\'s pod is its reconcile\'s business');
    assert.equal(byId(foreign.id)?.deletedAt, null, 'another cluster\'s pod is never ours, whatever its name');
    await client.deletePod(live.id);
    await client.deletePod(foreign.id);
  } finally {
    await accounts.close();
    await assertNoLeaks(sim.adminUrl, 5000).finally(() => sim.stop());
  }
});
