// Timing behaviours of the live service, judged over HTTP: the pod list lagging behind creates and
// deletes (API-NOTES S6), the two status flows while a pod boots (§3 and the 2026-12 addendum), and
// rate limits longer than a minute (an exhausted hour window, a long Retry-After).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertNoLeaks, injectFault, simPods } from './client.ts';
import { startSimulator, type RunningSimulator, type SimConfigInput } from './server.ts';
import { call, field, keyPair, sshdPodBody } from './testkit.ts';
import { eventually } from '../support/eventually.ts';

const KEY = 'sim-test-account-key-lag';
const a40 = (name: string): Record<string, unknown> => ({ name, image: 'x', gpu: { id: 'NVIDIA A40' } });

async function withSim(config: SimConfigInput, body: (sim: RunningSimulator) => Promise<void>): Promise<void> {
  const sim = await startSimulator({ apiKeys: [KEY], config });
  try {
    await body(sim);
    for (const pod of await simPods(sim.adminUrl)) if (pod.deletedAt === null) await call(sim, 'DELETE', `/v2/pods/${pod.id}`, { key: KEY });
    await assertNoLeaks(sim.adminUrl);
  } finally {
    await sim.stop();
  }
}

async function listedIds(sim: RunningSimulator): Promise<string[]> {
  const pods = field((await call(sim, 'GET', '/v2/pods', { key: KEY })).body, 'pods') as unknown[];
  return pods.map((pod) => String(field(pod, 'id')));
}

describe('list lag', () => {
  test('a new pod is missing from the list for createdMs, a deleted one still listed for deletedMs; GET is current', () =>
    withSim({ listLag: { createdMs: 1500, deletedMs: 1500 }, rateLimits: { enabled: false } }, async (sim) => {
      const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: a40('lagging') });
      assert.equal(created.status, 201);
      const id = String(field(created.body, 'id'));
      assert.deepEqual(await listedIds(sim), [], 'not listed right after its create');
      assert.equal((await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).status, 200, 'GET is not lagging by default');
      await eventually('the pod in the list', async () => ((await listedIds(sim)).includes(id) ? true : undefined), 10_000);

      assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
      assert.deepEqual(await listedIds(sim), [id], 'still listed right after its delete');
      const stale = (field((await call(sim, 'GET', '/v2/pods', { key: KEY })).body, 'pods') as unknown[])[0];
      assert.equal(field(stale, 'runtime'), null);
      assert.equal(field(stale, 'ssh', 'direct'), null);
      assert.equal((await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).status, 404);
      assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 404, 'a second delete finds nothing');
      await eventually('the pod gone from the list', async () => ((await listedIds(sim)).length === 0 ? true : undefined), 10_000);
    }));

  test('with listLag.get, GET lags like the list: 404 for a new pod, the old pod for a deleted one', () =>
    withSim({ listLag: { createdMs: 1500, deletedMs: 1500, get: true }, rateLimits: { enabled: false } }, async (sim) => {
      const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: a40('lagging-get') });
      const id = String(field(created.body, 'id'));
      assert.equal((await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).status, 404);
      await eventually('GET to find the pod', async () => ((await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).status === 200 ? true : undefined), 10_000);
      assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
      assert.equal((await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).status, 200, 'a deleted pod still answers during the lag');
      await eventually('GET to 404', async () => ((await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).status === 404 ? true : undefined), 10_000);
    }));
});

describe('status flow', () => {
  const statusOf = async (sim: RunningSimulator, id: string): Promise<{ status: unknown; direct: unknown; actions: unknown }> => {
    const body = (await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).body;
    return { status: field(body, 'status'), direct: field(body, 'ssh', 'direct'), actions: field(body, 'actions') };
  };

  test('running-at-once (default): RUNNING from the create on, ssh.direct null until the port answers', () =>
    withSim({ rateLimits: { enabled: false } }, async (sim) => {
      await injectFault(sim.adminUrl, { fault: 'slow-boot', delayMs: 1500 });
      const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: sshdPodBody('at-once', keyPair(), keyPair()) });
      assert.equal(field(created.body, 'status'), 'RUNNING');
      const id = String(field(created.body, 'id'));
      await sleep(300);
      assert.deepEqual(await statusOf(sim, id), { status: 'RUNNING', direct: null, actions: ['stop', 'restart', 'terminate'] });
      await eventually('ssh.direct', async () => ((await statusOf(sim, id)).direct === null ? undefined : true));
    }));

  test('provisioning-starting-running: PROVISIONING, then STARTING until the port answers, then RUNNING', () =>
    withSim({ pods: { statusFlow: 'provisioning-starting-running' }, rateLimits: { enabled: false } }, async (sim) => {
      await injectFault(sim.adminUrl, { fault: 'slow-boot', delayMs: 2000 });
      const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: sshdPodBody('flow', keyPair(), keyPair()) });
      assert.equal(field(created.body, 'status'), 'PROVISIONING');
      assert.deepEqual(field(created.body, 'actions'), ['stop', 'terminate']);
      assert.equal(field(created.body, 'runtime'), null);
      const id = String(field(created.body, 'id'));
      const starting = await eventually('STARTING', async () => {
        const seen = await statusOf(sim, id);
        return seen.status === 'STARTING' ? seen : undefined;
      });
      assert.deepEqual(starting, { status: 'STARTING', direct: null, actions: ['stop', 'terminate'] });
      const restart = await call(sim, 'POST', `/v2/pods/${id}/action`, { key: KEY, body: { action: 'restart' } });
      assert.equal(restart.status, 409, 'restart is not an action of a STARTING pod');
      const running = await eventually('RUNNING', async () => {
        const seen = await statusOf(sim, id);
        return seen.status === 'RUNNING' ? seen : undefined;
      });
      assert.ok(running.direct !== null, 'ssh.direct once RUNNING');
      const listed = (field((await call(sim, 'GET', '/v2/pods', { key: KEY })).body, 'pods') as unknown[])[0];
      assert.equal(field(listed, 'status'), 'RUNNING');
    }));
});

describe('rate limits beyond a minute', () => {
  test('an exhausted hour window answers 429 with a Retry-After of most of an hour', () =>
    withSim({ rateLimits: { minute: { quota: 100, seconds: 60 }, hour: { quota: 3, seconds: 3600 } } }, async (sim) => {
      for (let i = 0; i < 3; i += 1) assert.equal((await call(sim, 'GET', '/v2/pods', { key: KEY })).status, 200);
      const limited = await call(sim, 'GET', '/v2/pods', { key: KEY });
      assert.equal(limited.status, 429);
      assert.deepEqual(limited.body, { status: 429, title: 'Too Many Requests', detail: 'rate limit exceeded for the hour window' });
      assert.ok(Number(limited.headers.get('retry-after')) > 3500, `Retry-After ${limited.headers.get('retry-after')}`);
      assert.match(limited.headers.get('ratelimit') ?? '', /"hour";r=0;t=\d{4}/);
      // A create is refused the same way and creates nothing.
      assert.equal((await call(sim, 'POST', '/v2/pods', { key: KEY, body: a40('refused') })).status, 429);
      assert.equal((await simPods(sim.adminUrl)).length, 0);
    }));

  test('a rate-limit fault can ask for a Retry-After longer than a minute', () =>
    withSim({}, async (sim) => {
      await injectFault(sim.adminUrl, { fault: 'rate-limit', method: 'POST', path: '/v2/pods', retryAfterSeconds: 180 });
      const limited = await call(sim, 'POST', '/v2/pods', { key: KEY, body: a40('later') });
      assert.equal(limited.status, 429);
      assert.equal(limited.headers.get('retry-after'), '180');
      assert.equal((await simPods(sim.adminUrl)).length, 0);
    }));
});
