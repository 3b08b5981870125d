// A leader whose Lease is taken stops acting at once: no Runpod request, no status write after the
// loss, while its run's pod keeps running. Given the lease back, a fresh start carries on. Ends with
// the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoordinationV1Api, V1MicroTime } from '@kubernetes/client-node';
import { isConflict } from '../../src/kube/errors.ts';
import { simStats } from '../runpod-sim/client.ts';
import { testCluster } from '../support/cluster.ts';
import { runManifest, startWorld, unsuppressed } from '../support/operator.ts';

void test('a leader that reads another holder in its Lease sends nothing more to Runpod and writes no status', () => unsuppressed(async () => {
  await using world = await startWorld('lost-lease');
  await world.startController();
  const { kubeConfig } = await testCluster();
  const leases = kubeConfig.makeApiClient(CoordinationV1Api);
  const name = 'runpod-operator-leader';
  const setHolder = async (holderIdentity: string, leaseDurationSeconds: number): Promise<void> => {
    for (;;) {
      const lease = await leases.readNamespacedLease({ namespace: world.namespace, name });
      try {
        await leases.replaceNamespacedLease({
          namespace: world.namespace, name,
          body: { ...lease, spec: { ...lease.spec, holderIdentity, leaseDurationSeconds, renewTime: new V1MicroTime(), acquireTime: new V1MicroTime() } },
        });
        return;
      } catch (error) {
        if (!isConflict(error)) throw error; // the leader renewed in between
      }
    }
  };

  await world.apply(runManifest('steady', { job: { command: ['sleep', '600'] } }));
  await world.waitForRun('steady', 'Running', (run) => run.status?.phase === 'Running' && run.status.reason === 'JobRunning', 90_000);
  await setHolder('intruder', 3600);
  const deadline = Date.now() + 30_000;
  while (!world.logLines.some((line) => line.includes('lost leadership')) && Date.now() < deadline) await sleep(100);
  assert.ok(world.logLines.some((line) => line.includes('lost leadership')), 'the controller noticed');

  const accountCalls = async () => (await simStats(world.sim.adminUrl)).requests.filter((r) => r.caller === 'account').reduce((n, r) => n + r.count, 0);
  const before = await accountCalls();
  const statusBefore = (await world.run('steady'))?.metadata?.resourceVersion;
  await sleep(8000); // four poll intervals: a leader would have listed pods and polled the job meanwhile
  assert.equal(await accountCalls(), before, 'no Runpod request after the loss');
  assert.equal((await world.run('steady'))?.metadata?.resourceVersion, statusBefore, 'no write to the run after the loss');

  // The intruder hands the lease back; a fresh controller takes over and cleans up.
  await setHolder('', 1);
  await world.stopController();
  await world.startController();
  await world.deleteRun('steady');
}));
