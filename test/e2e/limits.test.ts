// The limits of a run end to end: keepPod never outlives the deadline, and a run whose credentials
// Secret goes mid-run keeps its phase and carries on when the key is back. Every test ends with the
// leak check (world.stop()).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { simPods } from '../runpod-sim/client.ts';
import { kubectl } from '../support/kubectl.ts';
import { runManifest, testApiKey, withWorld } from '../support/operator.ts';

const job = (script: string, spec: Record<string, unknown> = {}) => ({ job: { command: ['sh', '-c', script] }, results: { path: 'output' }, ...spec });

describe('a run\'s limits', { concurrency: true }, () => {
  test('keepPod: the kept pod of a Succeeded run is deleted at its deadline; the run stays Succeeded', () =>
    withWorld('keepdeadline', async (world) => {
      await world.apply(runManifest('keepdl', job('mkdir -p output && echo kept > output/k.txt', { keepPod: true, limits: { maxRuntimeSeconds: 45 } })));
      const kept = await world.waitForRun('keepdl', 'Succeeded and kept', (r) => r.status?.phase === 'Succeeded', 90_000);
      assert.notEqual(kept.status?.pod?.state, 'Deleted', JSON.stringify(kept.status));
      const run = await world.waitForRun('keepdl', 'the kept pod deleted', (r) => r.status?.pod?.state === 'Deleted', 120_000);
      assert.equal(run.status?.phase, 'Succeeded');
      const [pod] = await simPods(world.sim.adminUrl);
      assert.ok(pod?.deletedAt, 'deleted');
      assert.ok(Date.parse(pod.deletedAt) - Date.parse(pod.createdAt) >= 44_000, `deleted ${Date.parse(pod.deletedAt) - Date.parse(pod.createdAt)} ms after its creation`);
      await world.deleteRun('keepdl');
    }, { watchdogPeriod: '1s' }));

  test('the credentials Secret deleted mid-run: the run stays Running (CredentialsMissing), then carries on when it is back', () =>
    withWorld('credsgone', async (world) => {
      await world.apply(runManifest('credsgone', job('sleep 30 && mkdir -p output && echo done > output/d.txt')));
      await world.waitForRun('credsgone', 'JobRunning', (r) => r.status?.reason === 'JobRunning', 90_000);
      await kubectl(['delete', 'secret', 'runpod', '-n', world.namespace]);
      const missing = await world.waitForRun('credsgone', 'CredentialsMissing', (r) => r.status?.reason === 'CredentialsMissing', 60_000);
      assert.equal(missing.status?.phase, 'Running', JSON.stringify(missing.status));
      await kubectl(['create', 'secret', 'generic', 'runpod', '-n', world.namespace, `--from-literal=apiKey=${testApiKey}`]);
      const run = await world.waitForRun('credsgone', 'the end', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 120_000);
      assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
      assert.equal((await simPods(world.sim.adminUrl)).length, 1, 'no second pod');
      await world.deleteRun('credsgone');
    }));
});
