// Two installs of the controller on one cluster (same cluster id), each scoped to its own namespace
// with --namespace, sharing one Runpod account: neither may judge the other's pods. Each sweeps only
// the strays of its own scope; a cluster-wide install's pod is foreign to both. Ends with the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { POD_ENV } from '../../src/pod/protocol.ts';
import { simPods } from '../runpod-sim/client.ts';
import { createTestNamespace } from '../support/cluster.ts';
import { eventually, EVENTUALLY_MS } from '../support/eventually.ts';
import { kubectl } from '../support/kubectl.ts';
import { runManifest, testApiKey } from '../support/operator.ts';
import { sweptBy, withSharedAccount, type Install } from '../support/shared-account.ts';

interface TeamInstall extends Install { namespace: string }

test('two namespace-scoped installs on one account never sweep each other\'s pods, and each sweeps its own strays', async () => {
  const namespaces = [await createTestNamespace('team-a'), await createTestNamespace('team-b')];
  // One cluster id for both, as with the default (the UID of kube-system).
  await withSharedAccount(`test-shared-${namespaces[0]}`, async ({ sim, client, clusterId, start }) => {
    const installs: TeamInstall[] = [];
    for (const namespace of namespaces) {
      await kubectl(['create', 'secret', 'generic', 'runpod', '-n', namespace, `--from-literal=apiKey=${testApiKey}`]);
      installs.push({ namespace, ...(await start({ namespace, leaseNamespace: namespace })) });
    }
    for (const { namespace } of installs) {
      const applied = await kubectl(['apply', '-n', namespace, '-f', '-'], JSON.stringify(runManifest('train')));
      assert.equal(applied.status, 0, applied.stderr);
    }
    const runs = await Promise.all(installs.map(({ namespace }) => waitForPodReady(namespace)));

    // Strays of each scope (their runs never existed), and one of a cluster-wide install.
    const stray = (scope: string | undefined, tag: string) => client.createPod({
      name: `gone-${tag}-1`, image: 'img', gpu: { id: 'NVIDIA A40', count: 1 }, args: 'sleep 600',
      env: { [POD_ENV.cluster]: clusterId, [POD_ENV.run]: `uid-gone-${tag}`, ...(scope ? { [POD_ENV.scope]: scope } : {}) },
    });
    const strayA = await stray(`namespace/${namespaces[0]}`, 'a');
    const strayB = await stray(`namespace/${namespaces[1]}`, 'b');
    const clusterWide = await stray('cluster-wide', 'all');
    const unscoped = await stray(undefined, 'none');

    // Well past the grace and many sweeps of both installs.
    const isGone = async (id: string) => (await simPods(sim.adminUrl)).find((pod) => pod.id === id)?.deletedAt != null;
    await eventually('both installs\' strays to be swept', async () => (await isGone(strayA.id)) && (await isGone(strayB.id)), EVENTUALLY_MS, 250);
    await sleep(8000);

    const pods = await simPods(sim.adminUrl);
    const byId = (id: string | undefined) => pods.find((pod) => pod.id === id);
    for (const [i, run] of runs.entries()) {
      assert.equal(byId(run.podId)?.deletedAt, null, `the pod of ${installs[i]?.namespace}/train was deleted`);
      const now = await readRun(installs[i]?.namespace ?? '');
      assert.equal(now.phase, 'Running', `${installs[i]?.namespace}/train: ${JSON.stringify(now)}`);
    }
    assert.ok(byId(strayA.id)?.deletedAt, 'team-a\'s stray is swept');
    assert.ok(byId(strayB.id)?.deletedAt, 'team-b\'s stray is swept');
    assert.equal(byId(clusterWide.id)?.deletedAt, null, 'a cluster-wide install\'s pod is foreign to a namespace-scoped one');
    assert.equal(byId(unscoped.id)?.deletedAt, null, 'a pod without a scope marker is nobody\'s to sweep');
    assert.ok(sweptBy(installs[0], strayA.id) && !sweptBy(installs[1], strayA.id), 'team-a\'s stray is swept by team-a\'s install only');
    assert.ok(sweptBy(installs[1], strayB.id) && !sweptBy(installs[0], strayB.id), 'team-b\'s stray is swept by team-b\'s install only');
    assert.ok(installs.every((install) => install.logLines.some((line) => line.includes('confirmed'))), 'each deletion is confirmed in the log');

    await client.deletePod(clusterWide.id);
    await client.deletePod(unscoped.id);
    // A run let go with skip-cleanup leaves its pod: a real stray, swept by its own install only,
    // with the deletion confirmed and an Event on the (deleted) run.
    const [teamA, teamB] = installs;
    await kubectl(['annotate', 'rpr', 'train', '-n', teamA?.namespace ?? '', 'runpod-operator.dev/skip-cleanup=true']);
    const letGo = await kubectl(['delete', 'rpr', 'train', '-n', teamA?.namespace ?? '', '--timeout=60s']);
    assert.equal(letGo.status, 0, letGo.stderr);
    await eventually('the pod of a run let go to be swept', () => isGone(runs[0]?.podId ?? ''), 60_000, 250);
    // The simulator marks the pod deleted before its answer reaches the sweeper, which says so after it.
    const letGoPod = runs[0]?.podId ?? '';
    await eventually('team-a to say it swept the pod of the run let go', () => sweptBy(teamA, letGoPod), EVENTUALLY_MS, 250);
    assert.ok(!sweptBy(teamB, letGoPod), 'team-b never swept team-a\'s pod');
    await eventually('a StrayPodDeleted Event on the run for the confirmed deletion',
      async () => (await kubectl(['get', 'events.events.k8s.io', '-n', teamA?.namespace ?? '', '-o', 'json'])).stdout.includes('StrayPodDeleted'), EVENTUALLY_MS, 250);
    assert.equal(await isGone(runs[1]?.podId ?? ''), false, 'team-b\'s running pod is still untouched');
    const deleted = await kubectl(['delete', 'rpr', 'train', '-n', teamB?.namespace ?? '', '--timeout=60s']);
    assert.equal(deleted.status, 0, deleted.stderr);
  });
});

async function readRun(namespace: string): Promise<{ phase?: string; podId?: string }> {
  const result = await kubectl(['get', 'rpr', 'train', '-n', namespace, '-o', 'json']);
  const run = JSON.parse(result.stdout) as { status?: { phase?: string; pod?: { id?: string } } };
  return { phase: run.status?.phase, podId: run.status?.pod?.id };
}

async function waitForPodReady(namespace: string): Promise<{ podId: string }> {
  let last: Awaited<ReturnType<typeof readRun>> | undefined;
  try {
    return await eventually(`${namespace}/train to reach Running`, async () => {
      last = await readRun(namespace);
      return last.phase === 'Running' && last.podId ? { podId: last.podId } : undefined;
    }, 90_000, 250);
  } catch (error) {
    return assert.fail(`${(error as Error).message}; last: ${JSON.stringify(last)}`);
  }
}
