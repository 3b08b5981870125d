// Two shards of one namespace (--selector with disjoint labels) on one Runpod account: each reconciles
// only its runs, marks its pods with its scope, and sweeps only its own strays; a run neither selects is
// left alone. Ends with the leak check.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { configSchema } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { startController, type RunningController } from '../../src/main.ts';
import { POD_ENV } from '../../src/pod/protocol.ts';
import { createRunpodClient } from '../../src/runpod/index.ts';
import { installScope } from '../../src/run/ownership.ts';
import { assertNoLeaks, simPods } from '../runpod-sim/client.ts';
import { startSimulator } from '../runpod-sim/server.ts';
import { createTestNamespace, testCluster } from '../support/cluster.ts';
import { consistently, eventually, EVENTUALLY_MS } from '../support/eventually.ts';
import { kubectl } from '../support/kubectl.ts';
import { runManifest, testApiKey, testTimings, unsuppressed } from '../support/operator.ts';

interface Shard { selector: string; controller: RunningController; logLines: string[] }

test('two shards (--selector) on one account each run their own runs and sweep only their own strays', async () => {
  const { kubeconfigPath } = await testCluster();
  // Two installs polling one account each second: a budget above a real account's, for a quick test.
  const sim = await startSimulator({ apiKeys: [testApiKey], config: { rateLimits: { minute: { quota: 600, seconds: 60 }, hour: { quota: 30_000, seconds: 3600 } } } });
  const resultsDir = mkdtempSync(join(tmpdir(), 'results-shards-'));
  const namespace = await createTestNamespace('shards');
  const clusterId = `test-shards-${namespace}`;
  const shards: Shard[] = [];
  const client = createRunpodClient({ apiKey: testApiKey, baseUrl: sim.baseUrl, logger: createLogger('silent') });
  await unsuppressed(async () => {
    await using cleanup = new AsyncDisposableStack();
    cleanup.defer(async () => {
      await sim.stop();
      rmSync(resultsDir, { recursive: true, force: true });
    });
    cleanup.defer(() => client.close());
    cleanup.defer(async () => { for (const shard of shards) await shard.controller.stop(); });
    cleanup.defer(() => assertNoLeaks(sim.adminUrl, 15_000));

    await kubectl(['create', 'secret', 'generic', 'runpod', '-n', namespace, `--from-literal=apiKey=${testApiKey}`]);
    for (const [i, selector] of ['shard=1', 'shard=2'].entries()) {
      const config = configSchema.parse({
        kubeconfig: kubeconfigPath, namespace, selector, clusterId, runpodApiUrl: sim.baseUrl, pollInterval: '1s',
        leaderElect: 'true', leaderElectionId: `runpod-operator-shard-${i + 1}`, logLevel: 'debug', resultsDir, sweepInterval: '1s', strayGrace: '2s',
        metricsBindAddress: '0', healthProbeBindAddress: '0',
      });
      const logLines: string[] = [];
      const logger = createLogger('debug', { write: (line: string) => { logLines.push(line); } });
      shards.push({ selector, logLines, controller: await startController(config, { logger, timings: testTimings, onLostLeadership: () => undefined }) });
    }
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
    const sweptBy = (shard: Shard | undefined, id: string) => shard?.logLines.some((line) => line.includes(id) && line.includes('stray')) ?? false;
    const [one, two] = shards;
    assert.ok(sweptBy(one, strayOne.id) && !sweptBy(two, strayOne.id), 'shard 1\'s stray is swept by shard 1 only');
    assert.ok(sweptBy(two, strayTwo.id) && !sweptBy(one, strayTwo.id), 'shard 2\'s stray is swept by shard 2 only');
    assert.equal(await isGone(podOne ?? ''), false, 'shard 1\'s running pod is untouched');
    assert.equal(await isGone(podTwo ?? ''), false, 'shard 2\'s running pod is untouched');

    for (const name of ['one', 'two', 'none']) {
      const deleted = await kubectl(['delete', 'rpr', name, '-n', namespace, '--timeout=60s']);
      assert.equal(deleted.status, 0, deleted.stderr);
    }
  });
});
