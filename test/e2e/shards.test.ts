// Two shards of one namespace (--selector with disjoint labels) on one Runpod account: each reconciles
// only its runs, marks its pods with its scope, and sweeps only its own strays; a run neither selects is
// left alone. Ends with the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { POD_ENV } from '../../src/pod/protocol.ts';
import { installScope } from '../../src/run/ownership.ts';
import { simPods } from '../runpod-sim/client.ts';
import { createTestNamespace } from '../support/cluster.ts';
import { consistently, eventually, EVENTUALLY_MS } from '../support/eventually.ts';
import { kubectl } from '../support/kubectl.ts';
import { runManifest, testApiKey } from '../support/operator.ts';
import { sweptBy, withSharedAccount } from '../support/shared-account.ts';

test('two shards (--selector) on one account each run their own runs and sweep only their own strays', async () => {
  const namespace = await createTestNamespace('shards');
  await withSharedAccount(`test-shards-${namespace}`, async ({ sim, client, clusterId, start }) => {
    await kubectl(['create', 'secret', 'generic', 'runpod', '-n', namespace, `--from-literal=apiKey=${testApiKey}`]);
    const one = await start({ namespace, selector: 'shard=1', leaderElectionId: 'runpod-operator-shard-1' });
    const two = await start({ namespace, selector: 'shard=2', leaderElectionId: 'runpod-operator-shard-2' });
    const labelled = (name: string, labels: Record<string, string>) => ({ ...runManifest(name), metadata: { name, labels } });
    for (const run of [labelled('one', { shard: '1' }), labelled('two', { shard: '2' }), labelled('none', {})]) {
      const applied = await kubectl(['apply', '-n', namespace, '-f', '-'], JSON.stringify(run));
      assert.equal(applied.status, 0, applied.stderr);
    }
    const read = async (name: string) => {
      const run = JSON.parse((await kubectl(['get', 'rpr', name, '-n', namespace, '-o', 'json'])).stdout) as { status?: { phase?: string; pod?: { id?: string } } };
      return run.status;
    };
    const podOf = async (name: string) => eventually(`${name} to reach Running`, async () => {
      const status = await read(name);
      return status?.phase === 'Running' ? status.pod?.id : undefined;
    }, 90_000, 250);
    const [podOne, podTwo] = await Promise.all([podOf('one'), podOf('two')]);
    const pods = await simPods(sim.adminUrl);
    assert.equal(pods.find((pod) => pod.id === podOne)?.env[POD_ENV.scope], installScope(namespace, 'shard=1'));
    assert.equal(pods.find((pod) => pod.id === podTwo)?.env[POD_ENV.scope], installScope(namespace, 'shard=2'));
    // (The API server defaults an untouched run's status to {observedGeneration: 0}: no phase, no conditions.)
    await consistently('a run no shard selects is left alone', async () => (await read('none'))?.phase === undefined, 3000, 500);

    // A stray of each shard (its run never existed): swept by its own shard only.
    const stray = (selector: string, tag: string) => client.createPod({
      name: `gone-${tag}-1`, image: 'img', gpu: { id: 'NVIDIA A40', count: 1 }, args: 'sleep 600',
      env: { [POD_ENV.cluster]: clusterId, [POD_ENV.run]: `uid-gone-${tag}`, [POD_ENV.scope]: installScope(namespace, selector) },
    });
    const [strayOne, strayTwo] = [await stray('shard=1', 'one'), await stray('shard=2', 'two')];
    const isGone = async (id: string) => (await simPods(sim.adminUrl)).find((pod) => pod.id === id)?.deletedAt != null;
    await eventually('both shards\' strays to be swept', async () => (await isGone(strayOne.id)) && (await isGone(strayTwo.id)), EVENTUALLY_MS, 250);
    // The simulator marks a pod deleted before its answer reaches the sweeper, which says so after it.
    await eventually('each shard to say it swept its stray', () => sweptBy(one, strayOne.id) && sweptBy(two, strayTwo.id), EVENTUALLY_MS, 250);
    assert.ok(!sweptBy(two, strayOne.id) && !sweptBy(one, strayTwo.id), 'no shard swept the other\'s stray');
    assert.equal(await isGone(podOne ?? ''), false, 'shard 1\'s running pod is untouched');
    assert.equal(await isGone(podTwo ?? ''), false, 'shard 2\'s running pod is untouched');

    for (const name of ['one', 'two', 'none']) {
      const deleted = await kubectl(['delete', 'rpr', name, '-n', namespace, '--timeout=60s']);
      assert.equal(deleted.status, 0, deleted.stderr);
    }
  });
});
