// What Runpod refuses, end to end: a Retry-After longer than a worker waits for its account (5 s), the account spend limit, and a
// key lacking a scope. Waits never fail a run nor walk the GPU list; a missing scope ends it clearly.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { countRequests, injectFault, simPods, simStats } from '../runpod-sim/client.ts';
import { kubectl } from '../support/kubectl.ts';
import { hasCondition, runManifest, testApiKey, withWorld } from '../support/operator.ts';

const podReady = (run: Parameters<typeof hasCondition>[0]) => hasCondition(run, 'PodReady');

async function eventsOf(namespace: string): Promise<string> {
  return (await kubectl(['get', 'events.events.k8s.io', '-n', namespace, '-o', 'json'])).stdout;
}

describe('refusals', { concurrency: true }, () => {
  test('a 429 with a 25 s Retry-After: Pending/RateLimited, no create storm, then the same attempt succeeds', () =>
    withWorld('ratelimited', async (world) => {
      await injectFault(world.sim.adminUrl, { fault: 'rate-limit', method: 'POST', path: '/v2/pods', retryAfterSeconds: 25 });
      await world.apply(runManifest('ratelimited'));
      const waiting = await world.waitForRun('ratelimited', 'RateLimited', (r) => r.status?.reason === 'RateLimited');
      assert.equal(waiting.status?.phase, 'Pending');
      assert.equal(waiting.status?.attempts?.[0]?.outcome, 'RateLimited');
      await sleep(15_000);
      assert.equal(countRequests(await simStats(world.sim.adminUrl), 'POST', '/v2/pods'), 1, 'nothing resent before Retry-After');
      assert.equal((await world.run('ratelimited'))?.status?.phase, 'Pending');
      const run = await world.waitForRun('ratelimited', 'PodReady', podReady, 150_000);
      assert.deepEqual(run.status?.attempts?.map((a) => [a.name, a.gpuType, a.outcome]), [['ratelimited-1', 'NVIDIA GeForce RTX 4090', 'Created']]);
      assert.equal(countRequests(await simStats(world.sim.adminUrl), 'POST', '/v2/pods'), 2);
      assert.match(await eventsOf(world.namespace), /RateLimited/);
      await world.deleteRun('ratelimited');
    }));

  test('the account spend limit: the second run waits Pending/SpendLimitReached on its first type, and starts once the first run frees room', () =>
    withWorld('spend', async (world) => {
      await world.apply(runManifest('first'));
      await world.waitForRun('first', 'PodReady', podReady, 90_000);
      // A 4090 ($0.69) runs; another 4090, or an A40 ($0.40), would exceed $1.00/h.
      await world.apply(runManifest('second'));
      const waiting = await world.waitForRun('second', 'SpendLimitReached', (r) => r.status?.reason === 'SpendLimitReached');
      assert.equal(waiting.status?.phase, 'Pending');
      await world.waitForRun('second', 'headroom', (r) => /running pods/.test(r.status?.message ?? ''));
      const message = (await world.run('second'))?.status?.message ?? '';
      assert.match(message, /account spend limit \$1\.00\/h, running pods \$0\.69\/h, this pod needs \$0\.69\/h/);
      await sleep(5000);
      const still = await world.run('second');
      assert.deepEqual(still?.status?.attempts?.map((a) => [a.gpuType, a.outcome]), [['NVIDIA GeForce RTX 4090', 'SpendLimited']], 'the next GPU type is not tried');
      assert.match(await eventsOf(world.namespace), /SpendLimitReached/);
      await world.deleteRun('first');
      const run = await world.waitForRun('second', 'PodReady', podReady, 120_000);
      assert.deepEqual(run.status?.attempts?.map((a) => [a.name, a.gpuType, a.outcome]), [['second-1', 'NVIDIA GeForce RTX 4090', 'Created']]);
      assert.equal(run.status?.waitingSince, undefined);
      assert.equal((await simPods(world.sim.adminUrl)).length, 2);
      await world.deleteRun('second');
    }, { sim: { account: { spendRateUsdPerHour: 1 } } }));

  test('a 401 at a new leader\'s first lists is evidence, not a verdict: the running run keeps its pod and goes on', () =>
    withWorld('leader401', async (world) => {
      await world.apply(runManifest('leader401'));
      await world.waitForRun('leader401', 'Running', (r) => r.status?.phase === 'Running' && r.status.reason === 'JobRunning', 90_000);
      await world.stopController();
      // Runpod refuses the key for the first lists the new leader takes (its sweep's and its observer's).
      await injectFault(world.sim.adminUrl, { fault: 'refuse', status: 401, method: 'GET', path: '/v2/pods', count: 3 });
      await world.startController();
      for (let i = 0; i < 120 && countRequests(await simStats(world.sim.adminUrl), 'GET', '/v2/pods', 401) < 3; i++) await sleep(250);
      assert.equal(countRequests(await simStats(world.sim.adminUrl), 'GET', '/v2/pods', 401), 3, 'the new leader met the refusals');
      const back = await world.waitForRun('leader401', 'listed again', (r) => r.status?.reason === 'JobRunning' && Date.parse(r.status.pod?.listedAt ?? '') > 0);
      assert.equal(back.status?.phase, 'Running');
      const [pod] = await simPods(world.sim.adminUrl);
      assert.equal(pod?.deletedAt, null, 'the healthy pod is not deleted');
      assert.doesNotMatch(await eventsOf(world.namespace), /"reason":"CredentialsRejected"[^}]*"type":"Warning"/);
      await world.deleteRun('leader401');
    }));

  test('a key Runpod refuses after it had accepted lists: the running run says so and keeps its pod; accepted again, it goes on', () =>
    withWorld('midrun401', async (world) => {
      await world.apply(runManifest('midrun401'));
      await world.waitForRun('midrun401', 'Running', (r) => r.status?.phase === 'Running' && r.status.reason === 'JobRunning', 90_000);
      // Four lists in a row (about 8 s at this world's 2 s poll): not confirmed, which takes a minute.
      await injectFault(world.sim.adminUrl, { fault: 'refuse', status: 401, method: 'GET', path: '/v2/pods', count: 4 });
      const refused = await world.waitForRun('midrun401', 'CredentialsRejected', (r) => r.status?.reason === 'CredentialsRejected', 60_000);
      assert.equal(refused.status?.phase, 'Running');
      assert.match(refused.status?.message ?? '', /refused pod list.*keeps its pod and its limits/);
      const back = await world.waitForRun('midrun401', 'JobRunning again', (r) => r.status?.reason === 'JobRunning', 60_000);
      assert.equal(back.status?.phase, 'Running');
      const [pod] = await simPods(world.sim.adminUrl);
      assert.equal(pod?.deletedAt, null, 'the healthy pod is not deleted');
      await world.deleteRun('midrun401');
    }));

  test('a key without pods:write: Failed/CredentialsInsufficient naming the refused call, one create, no pod', () =>
    withWorld('noscope', async (world) => {
      await world.apply(runManifest('noscope'));
      const run = await world.waitForRun('noscope', 'Failed', (r) => r.status?.phase === 'Failed');
      assert.equal(run.status?.reason, 'CredentialsInsufficient');
      assert.match(run.status?.message ?? '', /may not create pods.*pods:write/);
      assert.ok(!JSON.stringify(run.status).includes(testApiKey), 'the key is not in the status');
      await sleep(3000);
      assert.equal(countRequests(await simStats(world.sim.adminUrl), 'POST', '/v2/pods'), 1, 'no retry storm');
      assert.equal((await simPods(world.sim.adminUrl)).length, 0);
      const events = await eventsOf(world.namespace);
      assert.match(events, /CredentialsInsufficient/);
      assert.ok(!events.includes(testApiKey));
      await world.deleteRun('noscope');
    }, { sim: { keys: [{ key: testApiKey, scopes: ['pods:read'] }] } }));

  test('a key without pods:read: Failed/CredentialsInsufficient before anything is created', () =>
    withWorld('noread', async (world) => {
      await world.apply(runManifest('noread'));
      const run = await world.waitForRun('noread', 'Failed', (r) => r.status?.phase === 'Failed');
      assert.equal(run.status?.reason, 'CredentialsInsufficient');
      assert.match(run.status?.message ?? '', /may not list pods.*pods:read/);
      assert.equal(countRequests(await simStats(world.sim.adminUrl), 'POST', '/v2/pods'), 0);
      await world.deleteRun('noread');
    }, { sim: { keys: [{ key: testApiKey, scopes: ['pods:write'] }] } }));
});
