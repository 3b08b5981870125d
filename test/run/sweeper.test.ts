// The stray sweep against the simulator: a pod this install owns (cluster id and scope) whose run
// is gone is deleted and the deletion confirmed; a pod of a run the cache misses but the API server
// has, a young pod, another cluster's or another scope's pod are never touched. Ends with the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger, type Logger } from '../../src/log.ts';
import { POD_ENV } from '../../src/pod/protocol.ts';
import { Accounts } from '../../src/run/memory/accounts.ts';
import { installScope } from '../../src/run/ownership.ts';
import { Sweeper, type StrayPod, type SweeperOptions } from '../../src/run/sweeper.ts';
import { createRunpodClient, type RunpodClient } from '../../src/runpod/index.ts';
import { rateLimiterForKey } from '../../src/runpod/rate-limiter.ts';
import { assertNoLeaks, injectFault, simPods } from '../runpod-sim/client.ts';
import { startSimulator, type RunningSimulator, type SimConfigInput } from '../runpod-sim/server.ts';

const apiKey = 'rpa_SWEEPER_TEST_KEY_0123456789';

interface SweepWorld { sim: RunningSimulator; accounts: Accounts; client: RunpodClient; logger: Logger; logLines: string[] }

/** A simulator, the account the sweeper knows, a client to make pods with, a logger whose lines the test reads; then the leak check. */
async function withSweepWorld(body: (world: SweepWorld) => Promise<void>, observed: { pollIntervalMs?: number; onPodsChanged?: (uids: string[]) => void; sim?: SimConfigInput; otherKeys?: string[] } = {}): Promise<void> {
  const sim = await startSimulator({ apiKeys: [apiKey, ...observed.otherKeys ?? []], config: observed.sim });
  const accounts = new Accounts({
    baseUrl: sim.baseUrl, clusterId: 'cluster-a', pollIntervalMs: observed.pollIntervalMs ?? 1000, logger: createLogger('silent'), onPodsChanged: observed.onPodsChanged ?? (() => {}),
  });
  const client = createRunpodClient({ apiKey, baseUrl: sim.baseUrl, logger: createLogger('silent') });
  const logLines: string[] = [];
  const logger = createLogger('info', { write: (line: string) => { logLines.push(line); } });
  try {
    await body({ sim, accounts, client, logger, logLines });
  } finally {
    for (const pod of await simPods(sim.adminUrl)) if (!pod.deletedAt) await client.deletePod(pod.id);
    await accounts.close();
    await client.close();
    await assertNoLeaks(sim.adminUrl, 5000).finally(() => sim.stop());
  }
}

test('the sweeper deletes only pods this install owns whose run no longer exists, and confirms each', () => withSweepWorld(async ({ sim, accounts, client, logger, logLines }) => {
    const scope = installScope('team-a');
    let created = 0;
    const create = (name: string, cluster: string, podScope: string, run: string) => client.createPod({
      name, image: 'img', gpu: { id: created++ % 2 ? 'NVIDIA A40' : 'NVIDIA GeForce RTX 4090', count: 1 }, args: 'sleep 600',
      env: { [POD_ENV.cluster]: cluster, [POD_ENV.scope]: podScope, [POD_ENV.run]: run },
    });
    const orphan = await create('gone-1', 'cluster-a', scope, 'uid-gone');
    const live = await create('live-1', 'cluster-a', scope, 'uid-live');
    const notCachedYet = await create('new-1', 'cluster-a', scope, 'uid-new');
    const foreignCluster = await create('gone-1', 'cluster-b', scope, 'uid-gone');
    const otherScope = await create('gone-1', 'cluster-a', installScope('team-b'), 'uid-gone-b');
    const clusterWide = await create('gone-1', 'cluster-a', installScope(undefined), 'uid-gone-all');

    const confirmed: StrayPod[] = [];
    let liveReads = 0;
    const options: SweeperOptions = {
      accounts, logger, intervalMs: 60_000, graceMs: 0, deadlineMarginMs: 60_000,
      owner: { clusterId: 'cluster-a', scope },
      cachedRunUids: () => new Set(['uid-live']),
      // The API server already has uid-new; the cache has not shown it yet.
      liveRunUids: () => { liveReads++; return Promise.resolve(new Set(['uid-live', 'uid-new'])); },
      // The account is known only from a run's credentials (no reconcile has asked for it).
      referencedApiKeys: () => Promise.resolve([apiKey]),
      onConfirmed: (stray) => confirmed.push(stray),
    };

    assert.deepEqual(await new Sweeper({ ...options, graceMs: 3_600_000 }).sweep(), [], 'nothing younger than the grace is judged');
    assert.equal(liveReads, 0, 'no candidate, no live read');

    const sweeper = new Sweeper(options);
    assert.deepEqual(await sweeper.sweep(), [orphan.id]);
    assert.equal(liveReads, 1, 'the run was read live before the delete');
    assert.equal(confirmed.length, 0, 'not confirmed before a newer list');
    assert.deepEqual(await sweeper.sweep(), [], 'gone from the newer list: not resent');
    assert.deepEqual(confirmed.map((stray) => [stray.podId, stray.runUid]), [[orphan.id, 'uid-gone']]);
    assert.ok(logLines.some((line) => line.includes(orphan.id) && line.includes('confirmed')), 'the confirmation is in the log');

    const pods = await simPods(sim.adminUrl);
    const byId = (id: string) => pods.find((pod) => pod.id === id);
    assert.equal(byId(orphan.id)?.deletedBy, 'account');
    assert.equal(byId(live.id)?.deletedAt, null, 'a live run\'s pod is its reconcile\'s business');
    assert.equal(byId(notCachedYet.id)?.deletedAt, null, 'a stale cache never causes a delete');
    assert.equal(byId(foreignCluster.id)?.deletedAt, null, 'another cluster\'s pod is never ours, whatever its name');
    assert.equal(byId(otherScope.id)?.deletedAt, null, 'another namespace-scoped install\'s pod is never ours');
    assert.equal(byId(clusterWide.id)?.deletedAt, null, 'a cluster-wide install\'s pod is not a namespace-scoped install\'s');
}));

test('the sweeper deletes any pod it owns once its own deadline marker + the margin has passed, its run alive or not', () => withSweepWorld(async ({ sim, accounts, client, logger, logLines }) => {
    const scope = installScope('team-a');
    const now = Math.floor(Date.now() / 1000);
    const create = (name: string, cluster: string, run: string, deadline: number | string) => client.createPod({
      name, image: 'img', gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 }, args: 'sleep 600',
      env: { [POD_ENV.cluster]: cluster, [POD_ENV.scope]: scope, [POD_ENV.run]: run, [POD_ENV.deadline]: String(deadline) },
    });
    // Its run is alive and cached: only the deadline can condemn it (a container that died, or a
    // pod key that may not delete its pod, leaves the controller the only one who can).
    const overdue = await create('overdue-1', 'cluster-a', 'uid-live', now - 120);
    const inMargin = await create('margin-1', 'cluster-a', 'uid-live', now - 10);
    const future = await create('future-1', 'cluster-a', 'uid-live', now + 600);
    const unreadable = await create('bad-1', 'cluster-a', 'uid-live', 'soon');
    const foreign = await create('overdue-1', 'cluster-b', 'uid-live', now - 120);

    let liveReads = 0;
    const sweeper = new Sweeper({
      accounts, logger, intervalMs: 60_000, deadlineMarginMs: 60_000,
      // The grace guards strays only: a deadline is absolute, however young the pod.
      graceMs: 3_600_000,
      owner: { clusterId: 'cluster-a', scope },
      cachedRunUids: () => new Set(['uid-live']),
      liveRunUids: () => { liveReads++; return Promise.resolve(new Set(['uid-live'])); },
      referencedApiKeys: () => Promise.resolve([apiKey]),
    });
    assert.deepEqual(await sweeper.sweep(), [overdue.id]);
    assert.equal(liveReads, 0, 'a deadline needs no read of the runs');
    assert.ok(logLines.some((line) => line.includes(overdue.id) && line.includes('deadline')), 'the log says why');
    assert.ok(!logLines.join('\n').includes(apiKey), 'the Runpod key is never in the log');
    assert.deepEqual(await sweeper.sweep(), [], 'gone from the newer list: not resent');

    const pods = await simPods(sim.adminUrl);
    const byId = (id: string) => pods.find((pod) => pod.id === id);
    assert.equal(byId(overdue.id)?.deletedBy, 'account');
    assert.equal(byId(inMargin.id)?.deletedAt, null, 'within the margin the pod\'s watchdog and the reconcile come first');
    assert.equal(byId(future.id)?.deletedAt, null);
    assert.equal(byId(unreadable.id)?.deletedAt, null, 'no readable deadline, no judgement from it');
    assert.equal(byId(foreign.id)?.deletedAt, null, 'another cluster\'s pod is never ours, whatever its deadline');
}));

test('the sweeper\'s list serves the runs of an account in use too: they need not wait for their own next poll', async () => {
  // Chaos seed 43 at N=100 on ff3c1ab: after a restart the sweeper listed the account at once, but the
  // observer's own first list met 429s for 7 s more, and every run of the account waited for it (a
  // job-ended run's retrieval started 10 s into a 17 s leader term; its results were lost).
  const changed: string[][] = [];
  await withSweepWorld(async ({ accounts, client, logger }) => {
    const scope = installScope('team-a');
    const observer = accounts.get(apiKey).observer;
    while (!observer.snapshot) await new Promise((resolve) => setTimeout(resolve, 20));
    const firstList = observer.snapshot.listedAt;
    const pod = await client.createPod({
      name: 'r-1', image: 'img', gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 }, args: 'sleep 600',
      env: { [POD_ENV.cluster]: 'cluster-a', [POD_ENV.scope]: scope, [POD_ENV.run]: 'uid-live' },
    });
    const sweeper = new Sweeper({
      accounts, logger, intervalMs: 60_000, deadlineMarginMs: 60_000, owner: { clusterId: 'cluster-a', scope },
      cachedRunUids: () => new Set(['uid-live']), liveRunUids: () => Promise.resolve(new Set(['uid-live'])),
    });
    assert.deepEqual(await sweeper.sweep(), []);
    assert.ok(observer.snapshot.listedAt > firstList, 'the snapshot is the sweeper\'s list, not the observer\'s first');
    assert.deepEqual(observer.snapshot.byRun.get('uid-live')?.map((p) => p.id), [pod.id]);
    assert.deepEqual(changed.at(-1), ['uid-live'], 'the run is told, as by a poll');
  }, { pollIntervalMs: 600_000, onPodsChanged: (uids) => changed.push(uids) });
});

// Longer than a failed list's retries (4 attempts, backoff up to 3.5 s), so the deleted pod is still listed after one.
const listLagAfterDeleteMs = 6000;

test('over paged lists, a page that fails makes the whole list unusable: nothing is judged or confirmed on the pages that were read', () => withSweepWorld(async ({ sim, accounts, client, logger, logLines }) => {
  const scope = installScope('team-a');
  const create = (name: string, run: string) => client.createPod({
    name, image: 'img', gpu: { id: 'NVIDIA A40', count: 1 }, args: 'sleep 600',
    env: { [POD_ENV.cluster]: 'cluster-a', [POD_ENV.scope]: scope, [POD_ENV.run]: run },
  });
  // Pages of two, in creation order: [live-a, live-b] [stray, live-c].
  await create('live-a-1', 'uid-a');
  await create('live-b-1', 'uid-b');
  const stray = await create('gone-1', 'uid-gone');
  await create('live-c-1', 'uid-c');
  const confirmed: StrayPod[] = [];
  const live = new Set(['uid-a', 'uid-b', 'uid-c']);
  const sweeper = new Sweeper({
    accounts, logger, intervalMs: 60_000, graceMs: 0, deadlineMarginMs: 60_000, owner: { clusterId: 'cluster-a', scope },
    cachedRunUids: () => live, liveRunUids: () => Promise.resolve(live), referencedApiKeys: () => Promise.resolve([apiKey]),
    onConfirmed: (pod) => confirmed.push(pod),
  });
  const failSecondPage = () => injectFault(sim.adminUrl, { fault: 'http-5xx', method: 'GET', path: '/v2/pods', pages: 'later', status: 503, count: 4 });
  const failedLists = () => logLines.filter((line) => line.includes('listing pods for the stray sweep failed')).length;

  await failSecondPage();
  assert.deepEqual(await sweeper.sweep(), [], 'no list, no judgement');
  assert.equal(failedLists(), 1, 'the failed list is logged');
  assert.deepEqual(await sweeper.sweep(), [stray.id], 'a whole list finds the stray on page 2');
  // The deleted pod is still listed for a while (list lag): only a whole list may say it is gone.
  await failSecondPage();
  assert.deepEqual(await sweeper.sweep(), []);
  assert.equal(failedLists(), 2);
  assert.equal(confirmed.length, 0, 'page 1 alone does not confirm a deletion');
  assert.deepEqual(await sweeper.sweep(), [stray.id], 'a whole list still shows it: sent again, not confirmed');
  assert.equal(confirmed.length, 0);
  const deletedAt = Date.parse((await simPods(sim.adminUrl)).find((pod) => pod.id === stray.id)?.deletedAt ?? '');
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, deletedAt + listLagAfterDeleteMs + 100 - Date.now())));
  await sweeper.sweep();
  assert.deepEqual(confirmed.map((pod) => pod.podId), [stray.id], 'a whole list without it confirms it');
  const pods = await simPods(sim.adminUrl);
  assert.deepEqual(pods.filter((pod) => pod.deletedAt).map((pod) => pod.id), [stray.id], 'only the stray was deleted');
}, { sim: { pods: { pageSize: 2 }, listLag: { deletedMs: listLagAfterDeleteMs }, rateLimits: { enabled: false } } }));

/** A pod of account `client` that this install owns, its deadline marker two minutes behind. */
const overduePod = (client: RunpodClient, name: string) => client.createPod({
  name, image: 'img', gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 }, args: 'sleep 600',
  env: { [POD_ENV.cluster]: 'cluster-a', [POD_ENV.scope]: installScope('team-a'), [POD_ENV.run]: 'uid-live', [POD_ENV.deadline]: String(Math.floor(Date.now() / 1000) - 120) },
});

const sweeperOf = (world: SweepWorld, keys: string[]) => new Sweeper({
  accounts: world.accounts, logger: world.logger, intervalMs: 60_000, deadlineMarginMs: 60_000, graceMs: 3_600_000,
  owner: { clusterId: 'cluster-a', scope: installScope('team-a') },
  cachedRunUids: () => new Set(['uid-live']), liveRunUids: () => Promise.resolve(new Set(['uid-live'])),
  referencedApiKeys: () => Promise.resolve(keys),
});

test('a malformed key among the referenced ones is skipped and logged once; every other account is swept', () => withSweepWorld(async (world) => {
  // What `echo KEY | base64` with a stray byte makes: a key no HTTP header can carry.
  const badKey = 'rpa_BAD\x01KEY_DO_NOT_LOG_SWEEP_4411';
  const overdue = await overduePod(world.client, 'overdue-1');
  const sweeper = sweeperOf(world, [badKey, apiKey]);
  assert.deepEqual(await sweeper.sweep(), [overdue.id], 'the other account is swept');
  assert.deepEqual(await sweeper.sweep(), []);
  const skipped = world.logLines.filter((line) => line.includes('cannot be used'));
  assert.equal(skipped.length, 1, `logged once, not every pass:\n${skipped.join('')}`);
  assert.ok(!world.logLines.join('\n').includes('KEY_DO_NOT_LOG_SWEEP'), 'no part of the bad key is logged');
}));

test('an account whose calls wait out a long Retry-After does not hold back the sweep of the others', () => withSweepWorld(async (world) => {
  const slowKey = 'rpa_SWEEPER_SLOW_ACCOUNT_0123456789';
  const overdue = await overduePod(world.client, 'overdue-2');
  // What a 429 with Retry-After: 50 leaves behind: nobody of that account sends anything for 50 s.
  rateLimiterForKey(slowKey).backOff(50_000);
  const sweeper = sweeperOf(world, [slowKey, apiKey]);
  let passEnded = false;
  const pass = sweeper.sweep().finally(() => { passEnded = true; });
  let deletedAt: string | null | undefined = null;
  for (let i = 0; i < 100 && !deletedAt; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    deletedAt = (await simPods(world.sim.adminUrl)).find((pod) => pod.id === overdue.id)?.deletedAt;
  }
  assert.ok(deletedAt, 'the overdue pod of the account that can be listed was deleted while the other waited');
  assert.equal(passEnded, false, 'the slow account is still waiting');
  await sweeper.stop();
  assert.deepEqual(await pass, [overdue.id], 'stop() ends the waiting list at once');
}, { otherKeys: ['rpa_SWEEPER_SLOW_ACCOUNT_0123456789'] }));

test('a delete of an overdue pod that fails is tried again within seconds, not at the next sweep interval', () => withSweepWorld(async (world) => {
  const overdue = await overduePod(world.client, 'overdue-3');
  // A refused DELETE (a blip at a new leader, a rotation): not retried by the client, so the sweep must.
  await injectFault(world.sim.adminUrl, { fault: 'refuse', status: 401, method: 'DELETE', path: '/v2/pods/{id}', count: 1 });
  const sweeper = new Sweeper({
    accounts: world.accounts, logger: world.logger, intervalMs: 600_000, deadlineMarginMs: 60_000, graceMs: 3_600_000,
    owner: { clusterId: 'cluster-a', scope: installScope('team-a') },
    cachedRunUids: () => new Set(['uid-live']), liveRunUids: () => Promise.resolve(new Set(['uid-live'])),
    referencedApiKeys: () => Promise.resolve([apiKey]),
  });
  sweeper.start();
  try {
    let deletedAt: string | null | undefined = null;
    for (let i = 0; i < 150 && !deletedAt; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      deletedAt = (await simPods(world.sim.adminUrl)).find((pod) => pod.id === overdue.id)?.deletedAt;
    }
    assert.ok(deletedAt, 'deleted on a retry within 15 s, though the sweep interval is 10 minutes');
    assert.ok(world.logLines.some((line) => line.includes('swept again in 2s')), 'the log says when it tries again');
  } finally {
    await sweeper.stop();
  }
}));
