// Provisioning end to end: real API server, real kubectl, the simulator's real pods with a real
// sshd, the controller in-process. Every test ends with the leak check (world.stop()).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { generateKeyPair } from '../../src/ssh/index.ts';
import { injectFault, simPods } from '../runpod-sim/client.ts';
import { kubectl } from '../support/kubectl.ts';
import { hasCondition, runManifest, testApiKey, withWorld } from '../support/operator.ts';

const podReady = (run: Parameters<typeof hasCondition>[0]) => hasCondition(run, 'PodReady');

describe('provisioning', { concurrency: true }, () => {
  test('a run reaches PodReady on the first GPU type; kubectl shows it; deleting it deletes the pod', () =>
    withWorld('happy', async (world) => {
      await world.apply(runManifest('happy'));
      const run = await world.waitForRun('happy', 'PodReady', podReady);
      assert.equal(run.status?.phase, 'Running');
      assert.equal(run.status?.pod?.gpuType, 'NVIDIA GeForce RTX 4090');
      assert.equal(run.status?.attempts?.length, 1);
      assert.equal(run.status?.observedGeneration, 1);
      const table = await kubectl(['get', 'rpr', 'happy', '-n', world.namespace]);
      assert.match(table.stdout, new RegExp(`happy\\s+Running\\s+(PodReady|JobRunning)\\s+NVIDIA GeForce RTX 4090\\s+${run.status?.pod?.id}\\s+0\\.69`));
      const pods = await simPods(world.sim.adminUrl);
      assert.equal(pods.length, 1);
      assert.equal(pods[0]?.env.RUNPOD_OPERATOR_RUN, run.metadata.uid);
      assert.equal(pods[0]?.env.RUNPOD_OPERATOR_CLUSTER, world.clusterId);
      assert.ok(!JSON.stringify(pods[0]?.env).includes(testApiKey), 'the account key never reaches a pod');
      await world.deleteRun('happy');
      const after = await simPods(world.sim.adminUrl);
      assert.ok(after.every((pod) => pod.deletedBy === 'account'), 'deleted by the controller before the finalizer went');
      assert.equal(await world.run('happy'), undefined);
    }));

  test('no stock on the first GPU type: the second is used', () =>
    withWorld('fallback', async (world) => {
      await injectFault(world.sim.adminUrl, { fault: 'no-capacity', count: 10, gpuTypeId: 'NVIDIA GeForce RTX 4090' });
      await world.apply(runManifest('fallback'));
      const run = await world.waitForRun('fallback', 'PodReady', podReady);
      assert.deepEqual(run.status?.attempts?.map((a) => [a.gpuType, a.outcome]), [['NVIDIA GeForce RTX 4090', 'NoCapacity'], ['NVIDIA A40', 'Created']]);
      assert.equal((await simPods(world.sim.adminUrl)).length, 1);
      await world.deleteRun('fallback');
    }));

  test('gpu.auto picks the cheapest type in stock', () =>
    withWorld('auto', async (world) => {
      await world.apply(runManifest('auto', { gpu: { auto: { minVramGb: 40 } } }));
      const run = await world.waitForRun('auto', 'PodReady', podReady);
      assert.equal(run.status?.pod?.gpuType, 'NVIDIA A40', 'the cheapest type with 40+ GB in the default catalog');
      await world.deleteRun('auto');
    }));

  test('a missing Secret waits (CredentialsMissing, no Runpod call); once created the run proceeds', () =>
    withWorld('creds', async (world) => {
      await world.apply(runManifest('creds', { credentials: { secretName: 'later' } }));
      await world.waitForRun('creds', 'CredentialsMissing', (r) => r.status?.reason === 'CredentialsMissing');
      assert.equal((await simPods(world.sim.adminUrl)).length, 0);
      await kubectl(['create', 'secret', 'generic', 'later', '-n', world.namespace, `--from-literal=apiKey=${testApiKey}`]);
      await world.waitForRun('creds', 'PodReady', podReady, 90_000);
      await world.deleteRun('creds');
    }));

  test('a key Runpod rejects fails the run CredentialsRejected', () =>
    withWorld('badkey', async (world) => {
      await kubectl(['create', 'secret', 'generic', 'wrong', '-n', world.namespace, '--from-literal=apiKey=rpa_WRONG_KEY_0000000000']);
      await world.apply(runManifest('badkey', { credentials: { secretName: 'wrong' } }));
      const run = await world.waitForRun('badkey', 'Failed', (r) => r.status?.phase === 'Failed');
      assert.equal(run.status?.reason, 'CredentialsRejected');
      assert.ok(!JSON.stringify(run.status).includes('rpa_WRONG_KEY'), 'the key is not in the status');
      await world.deleteRun('badkey');
    }));

  test('an ambiguous create (pod made, answer 500) is not resent: exactly one pod, adopted', () =>
    withWorld('ambiguous', async (world) => {
      await injectFault(world.sim.adminUrl, { fault: 'create-ambiguous', count: 1 });
      await world.apply(runManifest('ambiguous'));
      const run = await world.waitForRun('ambiguous', 'PodReady', podReady, 90_000);
      assert.equal((await simPods(world.sim.adminUrl)).length, 1);
      assert.equal(run.status?.attempts?.length, 1);
      assert.match(run.status?.attempts?.[0]?.message ?? '', /adopted/);
      await world.deleteRun('ambiguous');
    }));

  test('a pod that never presents the pinned host key: trusted with nothing, deleted after readyTimeoutSeconds, the next GPU type used', () =>
    withWorld('hostkey', async (world) => {
      // Both pods boot slowly, so each patch below lands before that pod's first probe (4 s was too
      // short on a loaded machine: the pod was probed, and trusted, before the first patch).
      await injectFault(world.sim.adminUrl, { fault: 'slow-boot', count: 2, delayMs: 12_000 });
      await world.apply(runManifest('hostkey', { limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 30 } }));
      await world.waitForRun('hostkey', 'created', (r) => r.status?.pod?.id !== undefined);
      // Pin another key than the one the pod was given: every handshake with it is refused.
      const secret = JSON.parse((await kubectl(['get', 'secret', 'hostkey-ssh', '-n', world.namespace, '-o', 'json'])).stdout) as { data: Record<string, string> };
      const pinned = secret.data['host-key.pub'] ?? '';
      const pin = async (key: string) => {
        const patch = { data: { 'host-key.pub': key } };
        assert.equal((await kubectl(['patch', 'secret', 'hostkey-ssh', '-n', world.namespace, '--type', 'merge', '-p', JSON.stringify(patch)])).status, 0);
      };
      await pin(Buffer.from(generateKeyPair('other').publicKey).toString('base64'));
      const messages = new Set<string>();
      const waited = await world.waitForRun('hostkey', 'the first attempt given up', (r) => {
        messages.add(r.status?.message ?? '');
        return r.status?.attempts?.[0]?.outcome === 'NotReady';
      }, 90_000);
      assert.equal(waited.status?.phase, 'Provisioning', 'a foreign key is waited out, not a failure');
      assert.ok([...messages].some((m) => /not the pinned one/.test(m)), [...messages].join(' | '));
      assert.ok(!hasCondition(waited, 'PodReady'));
      // The right key again: the next GPU type's pod is trusted.
      await pin(pinned);
      const run = await world.waitForRun('hostkey', 'PodReady', podReady, 90_000);
      assert.deepEqual(run.status?.attempts?.map((a) => [a.gpuType, a.outcome]), [['NVIDIA GeForce RTX 4090', 'NotReady'], ['NVIDIA A40', 'Created']]);
      const pods = await simPods(world.sim.adminUrl);
      assert.equal(pods.length, 2);
      assert.equal(pods[0]?.deletedBy, 'account', 'the untrusted pod was deleted by the controller');
      assert.ok(Date.parse(pods[0]?.deletedAt ?? '') <= Date.parse(pods[1]?.createdAt ?? ''), 'never two pods at once');
      await world.deleteRun('hostkey');
    }));

  test('deleting a run while it provisions deletes its pod, then the finalizer goes', () =>
    withWorld('delprov', async (world) => {
      await injectFault(world.sim.adminUrl, { fault: 'slow-boot', count: 1, delayMs: 20_000 });
      await world.apply(runManifest('delprov'));
      await world.waitForRun('delprov', 'created', (r) => r.status?.pod?.id !== undefined);
      await world.deleteRun('delprov');
      assert.ok((await simPods(world.sim.adminUrl)).every((pod) => pod.deletedAt !== null));
    }));

  test('cancel deletes the pod and ends Failed/Cancelled', () =>
    withWorld('cancel', async (world) => {
      await world.apply(runManifest('cancel'));
      await world.waitForRun('cancel', 'PodReady', podReady);
      assert.equal((await kubectl(['patch', 'rpr', 'cancel', '-n', world.namespace, '--type', 'merge', '-p', '{"spec":{"cancel":true}}'])).status, 0);
      const run = await world.waitForRun('cancel', 'Cancelled', (r) => r.status?.reason === 'Cancelled' && r.status.pod?.state === 'Deleted');
      assert.equal(run.status?.phase, 'Failed');
      assert.ok(hasCondition(run, 'Failed'));
      assert.ok((await simPods(world.sim.adminUrl)).every((pod) => pod.deletedBy === 'account'));
      await world.deleteRun('cancel');
    }));

  test('a controller restarted mid-provisioning adopts its pod: never a second one', () =>
    withWorld('restart', async (world) => {
      await injectFault(world.sim.adminUrl, { fault: 'slow-boot', count: 1, delayMs: 6000 });
      await world.apply(runManifest('restart'));
      await world.waitForRun('restart', 'created', (r) => r.status?.pod?.id !== undefined);
      await world.stopController();
      await sleep(1000);
      await world.startController();
      await world.waitForRun('restart', 'PodReady', podReady, 60_000);
      assert.equal((await simPods(world.sim.adminUrl)).length, 1);
      await world.deleteRun('restart');
    }));
});
