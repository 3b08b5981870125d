// A leader whose Lease is taken stops acting at once: no Runpod request, no status write after the
// loss, while its run's pod keeps running. Given the lease back, a fresh start carries on. Ends with
// the leak check.
import { test } from 'node:test';
import { CoordinationV1Api, V1MicroTime } from '@kubernetes/client-node';
import { isConflict } from '../../src/kube/errors.ts';
import { simStats } from '../runpod-sim/client.ts';
import { testCluster } from '../support/cluster.ts';
import { runManifest, startWorld, unsuppressed } from '../support/operator.ts';
import { consistently, eventually } from '../support/eventually.ts';

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
  await eventually('the controller to notice the lost leadership', () => world.logLines.some((line) => line.includes('lost leadership')));

  const accountCalls = async () => (await simStats(world.sim.adminUrl)).requests.filter((r) => r.caller === 'account').reduce((n, r) => n + r.count, 0);
  const before = await accountCalls();
  const statusBefore = (await world.run('steady'))?.metadata?.resourceVersion;
  // Four poll intervals: a leader would have listed pods and polled the job meanwhile.
  await Promise.all([
    consistently('no Runpod request after the loss', async () => (await accountCalls()) === before, 8000, 250),
    consistently('no write to the run after the loss', async () => (await world.run('steady'))?.metadata?.resourceVersion === statusBefore, 8000, 250),
  ]);

  // The intruder hands the lease back; a fresh controller takes over and cleans up.
  await setHolder('', 1);
  await world.stopController();
  await world.startController();
  await world.deleteRun('steady');
}));
