// Stale views never act (issue 9), against a real kube-apiserver and the simulator; each test ends
// with the leak check.
// - A reconcile whose view of the run became older than a write to it (the controller's own
//   earlier write landing late, an overlapping replica) never sends a second create.
// - The stray sweep never judges a pod by a read of the runs older than the pod list that showed
//   it: a pass lists its accounts one after the other (a 429 on a delete alone can hold it for a
//   minute), so a run the API server did not have at the pass's first read may own a pod that the
//   next account's list shows.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { finalizer, type RunpodRun } from '../../src/api/runpodrun.ts';
import { ConflictError } from '../../src/kube/errors.ts';
import { createLogger } from '../../src/log.ts';
import { POD_ENV } from '../../src/pod/protocol.ts';
import { Accounts } from '../../src/run/memory/accounts.ts';
import { installScope } from '../../src/run/ownership.ts';
import { stillCurrent, type RunReader } from '../../src/run/observe/fresh-view.ts';
import { RunApi } from '../../src/run/ports/run-api.ts';
import { Sweeper } from '../../src/run/sweeper.ts';
import { createRunpodClient, type RunpodClient } from '../../src/runpod/index.ts';
import { assertNoLeaks, countRequests, simPods, simStats } from '../runpod-sim/client.ts';
import { startSimulator } from '../runpod-sim/server.ts';
import { reconcilerWorld } from './reconciler-world.ts';
import { rpr, testRun } from '../kube/helpers.ts';
import { createTestNamespace, testCluster } from '../support/cluster.ts';

const keyA = 'rpa_SWEEPER_LIVE_KEY_A_0123456789';
const keyB = 'rpa_SWEEPER_LIVE_KEY_B_0123456789';
const graceMs = 200;

test('a reconcile whose view of the run is older than the write that recorded its pod sends no second create', async () => {
  const world = await reconcilerWorld('stale-create', keyA, { pollIntervalMs: 1000, ambiguousLookupMs: 2000 });
  const { namespace, sim, kubeConfig } = world;
  await world.createRun('stale', { job: { command: ['sleep', '600'] } });
  // Two reconcilers of one install: the one that writes first, and the one whose view is older than that write.
  const accountsOf: Accounts[] = [];
  const reconciler = () => {
    const made = world.reconciler();
    accountsOf.push(made.accounts);
    return made.reconciler;
  };
  const key = `${namespace}/stale`;
  const get = () => world.get('stale');
  const sshSecret = () => kubeConfig.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace, name: 'stale-ssh' }).then(() => true, () => false);
  try {
    const first = reconciler();
    // The steps before the first create: the finalizer, the run's SSH keys.
    for (let step = 0; step < 10 && !((await get()).metadata.finalizers?.includes(finalizer) && await sshSecret()); step++) await first.reconcile(key, { oneStep: true });
    assert.equal(countRequests(await simStats(sim.adminUrl), 'POST', '/v2/pods'), 0, 'no create yet');

    // The first reconciler's reads: one GET per reconcile, the create included (its attempt write confirmed the view).
    let reads = 0;
    let reconciles = 0;
    const firstGet = first.runs.get.bind(first.runs);
    first.runs.get = (...args) => { reads++; return firstGet(...args); };

    const late = reconciler();
    // Its account's pod list is in (decide creates nothing before one).
    const observer = accountsOf[1]?.get(keyA).observer;
    for (let wait = 0; wait < 200 && !observer?.snapshot; wait++) await delay(50);
    assert.ok(observer?.snapshot, 'the late reconciler has a pod list');
    const readSshSecret = late.runs.readSshSecret.bind(late.runs);
    let viewed: RunpodRun | undefined;
    // After the late reconcile read the run, and before it acts, the first records the attempt,
    // creates the pod and records it: the late reconcile's view is now older than that write.
    late.runs.readSshSecret = async (run) => {
      viewed = run;
      for (let step = 0; step < 5 && !(await get()).status?.pod?.id; step++, reconciles++) await first.reconcile(key, { oneStep: true });
      return readSshSecret(run);
    };
    await assert.rejects(late.reconcile(key, { oneStep: true }), ConflictError, 'the late reconcile may not act on its view');
    const recorded = await get();
    assert.ok(recorded.status?.pod?.id, `the first reconcile recorded its pod: ${JSON.stringify(recorded.status)}`);
    assert.ok(viewed && !viewed.status?.attempts, 'the late reconcile had decided on a view without the attempt');
    assert.equal(reads, reconciles, 'no GET added before the create: the attempt\'s conditional write confirmed the view');
    late.runs.readSshSecret = readSshSecret;
    await late.reconcile(key, { oneStep: true });

    const stats = await simStats(sim.adminUrl);
    assert.equal(countRequests(stats, 'POST', '/v2/pods'), 1, 'one create in all');
    assert.equal((await simPods(sim.adminUrl)).length, 1, 'one pod');
    assert.equal((await get()).status?.pod?.id, recorded.status?.pod?.id, 'the run still follows the recorded pod');
  } finally {
    await world.close();
  }
});

test('a view is still current only while the API server holds that very version of that very run', async () => {
  const { kubeConfig } = await testCluster();
  const namespace = await createTestNamespace('still-current');
  const objects = kubeConfig.makeApiClient(CustomObjectsApi);
  const api = new RunApi(kubeConfig);
  let gets = 0;
  const runs: RunReader = { get: (ns, name) => { gets++; return api.get(ns, name); } };
  const view = (await objects.createNamespacedCustomObject({ ...rpr, namespace, body: testRun(namespace, 'run') })) as RunpodRun;

  assert.equal(await stillCurrent(runs, view, view), true, 'nothing changed');
  assert.equal(gets, 1, 'read live when the reconcile wrote nothing');
  const written = await api.writeStatus(view, { phase: 'Pending', message: 'written by this reconcile' });
  assert.equal(await stillCurrent(runs, view, written), true, 'the reconcile\'s own conditional write confirmed the view');
  assert.equal(gets, 1, 'no read after a write');

  await objects.patchNamespacedCustomObject({ ...rpr, namespace, name: 'run', body: [{ op: 'add', path: '/metadata/labels', value: { touched: 'yes' } }] });
  assert.equal(await stillCurrent(runs, written, written), false, 'a write in between: decide again');
  await objects.deleteNamespacedCustomObject({ ...rpr, namespace, name: 'run' });
  assert.equal(await stillCurrent(runs, written, written), false, 'deleted');
  await objects.createNamespacedCustomObject({ ...rpr, namespace, body: testRun(namespace, 'run') });
  assert.equal(await stillCurrent(runs, written, written), false, 'another run of the same name');
});

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
      accounts, logger: createLogger('silent'), intervalMs: 60_000, graceMs, deadlineMarginMs: 60_000,
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
      // One account at a time, as when a pass has more accounts than it sweeps at once: B is listed after A's read.
      concurrentAccounts: 1,
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
