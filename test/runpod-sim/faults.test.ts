// Every injected fault does what it says, and is consumed as it fires.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertNoLeaks, countRequests, injectFault, simPods, simStats } from './client.ts';
import { CAPACITY_DETAIL } from './problems.ts';
import { startSimulator, type RunningSimulator } from './server.ts';
import { call, field, keyPair, shArgs, sshConnect, sshdPodBody, sshExec, waitForSsh } from './testkit.ts';

const KEY = 'sim-test-account-key-faults';
const a40 = (name: string): Record<string, unknown> => ({ name, image: 'x', gpu: { id: 'NVIDIA A40' } });

async function podNames(sim: RunningSimulator): Promise<string[]> {
  const pods = field((await call(sim, 'GET', '/v2/pods', { key: KEY })).body, 'pods') as unknown[];
  return pods.map((pod) => String(field(pod, 'name')));
}

async function deleteAll(sim: RunningSimulator): Promise<void> {
  for (const pod of await simPods(sim.adminUrl)) {
    if (pod.deletedAt === null) await call(sim, 'DELETE', `/v2/pods/${pod.id}`, { key: KEY });
  }
}

describe('fault injection', () => {
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSimulator({ apiKeys: [KEY] });
  });

  after(async () => {
    await sim.stop();
  });

  test('no-capacity refuses creates of the given GPU type with the 400 capacity body, then wears off', async () => {
    await injectFault(sim.adminUrl, { fault: 'no-capacity', gpuTypeId: 'NVIDIA A40', count: 1 });
    const other = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { ...a40('other-type'), gpu: { id: 'NVIDIA RTX A6000' } } });
    assert.equal(other.status, 201);
    const refused = await call(sim, 'POST', '/v2/pods', { key: KEY, body: a40('refused') });
    assert.equal(refused.status, 400);
    assert.equal(refused.headers.get('content-type'), 'application/problem+json');
    assert.deepEqual(refused.body, { status: 400, title: 'Bad Request', detail: CAPACITY_DETAIL });
    assert.equal((await call(sim, 'POST', '/v2/pods', { key: KEY, body: a40('after') })).status, 201);
    assert.deepEqual((await podNames(sim)).sort(), ['after', 'other-type']);
    await deleteAll(sim);
    await assertNoLeaks(sim.adminUrl);
  });

  test('create-ambiguous creates the pod and answers 500', async () => {
    await injectFault(sim.adminUrl, { fault: 'create-ambiguous' });
    const response = await call(sim, 'POST', '/v2/pods', { key: KEY, body: a40('ambiguous') });
    assert.equal(response.status, 500);
    assert.equal(field(response.body, 'title'), 'Internal Server Error');
    assert.deepEqual(await podNames(sim), ['ambiguous']);
    await deleteAll(sim);
    await assertNoLeaks(sim.adminUrl);
  });

  test('create-timeout creates the pod and never answers; the client gives up', async () => {
    await injectFault(sim.adminUrl, { fault: 'create-timeout' });
    await assert.rejects(call(sim, 'POST', '/v2/pods', { key: KEY, body: a40('timed-out'), signal: AbortSignal.timeout(300) }), { name: 'TimeoutError' });
    assert.deepEqual(await podNames(sim), ['timed-out']);
    // Counted with status 0 once the client hung up.
    const stats = await simStats(sim.adminUrl);
    assert.equal(countRequests(stats, 'POST', '/v2/pods', 0), 1);
    await deleteAll(sim);
    await assertNoLeaks(sim.adminUrl);
  });

  test('http-5xx answers the matching requests with the given status', async () => {
    await injectFault(sim.adminUrl, { fault: 'http-5xx', count: 2, method: 'GET', path: '/v2/pods', status: 503 });
    assert.equal((await call(sim, 'GET', '/v2/catalog/gpus', { key: KEY })).status, 200);
    const first = await call(sim, 'GET', '/v2/pods', { key: KEY });
    assert.equal(first.status, 503);
    assert.equal(field(first.body, 'status'), 503);
    assert.equal((await call(sim, 'GET', '/v2/pods', { key: KEY })).status, 503);
    assert.equal((await call(sim, 'GET', '/v2/pods', { key: KEY })).status, 200);
  });

  test('rate-limit answers 429 with Retry-After and the quota headers', async () => {
    await injectFault(sim.adminUrl, { fault: 'rate-limit', retryAfterSeconds: 7 });
    const limited = await call(sim, 'GET', '/v2/pods', { key: KEY });
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '7');
    assert.match(limited.headers.get('ratelimit') ?? '', /^"minute";r=\d+;t=\d+, "hour";r=\d+;t=\d+$/);
    assert.equal(limited.headers.get('ratelimit-policy'), '"minute";q=60;w=60, "hour";q=3000;w=3600');
    assert.deepEqual(limited.body, { status: 429, title: 'Too Many Requests', detail: 'rate limit exceeded for the minute window' });
    assert.equal((await call(sim, 'GET', '/v2/pods', { key: KEY })).status, 200);
  });

  test('refuse answers the matching requests with Runpod\'s 401 or 403 body, count times, then lets them through', async () => {
    await injectFault(sim.adminUrl, { fault: 'refuse', status: 401, method: 'GET', path: '/v2/pods', count: 2 });
    assert.equal((await call(sim, 'GET', '/v2/pods/nosuchpod', { key: KEY })).status, 404, 'another path is not refused');
    for (let i = 0; i < 2; i++) {
      const refused = await call(sim, 'GET', '/v2/pods', { key: KEY });
      assert.equal(refused.status, 401);
      assert.equal(refused.headers.get('content-type'), 'application/problem+json');
      assert.deepEqual(refused.body, { status: 401, title: 'Unauthorized', detail: 'invalid bearer token' });
    }
    assert.equal((await call(sim, 'GET', '/v2/pods', { key: KEY })).status, 200);
    await injectFault(sim.adminUrl, { fault: 'refuse', status: 403 });
    assert.deepEqual((await call(sim, 'POST', '/v2/pods', { key: KEY, body: a40('refused') })).body, { status: 403, title: 'Forbidden', detail: 'access denied' });
    assert.deepEqual(await podNames(sim), [], 'a refused create creates nothing');
  });

  test('not-found-flap answers 404 to GETs of a live pod, then the pod again', async () => {
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: a40('flapping') });
    const id = String(field(created.body, 'id'));
    await injectFault(sim.adminUrl, { fault: 'not-found-flap', podId: id, count: 2 });
    assert.equal((await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).status, 404);
    assert.deepEqual(await podNames(sim), ['flapping']);
    assert.equal((await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).status, 404);
    assert.equal((await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).status, 200);
    await deleteAll(sim);
    await assertNoLeaks(sim.adminUrl);
  });

  test('vanish kills a pod without a delete: 404, gone from the list, nothing left running', async () => {
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { ...a40('vanishing'), args: shArgs('sleep 4001 & exec sleep infinity') } });
    const id = String(field(created.body, 'id'));
    await injectFault(sim.adminUrl, { fault: 'vanish', podId: id });
    assert.equal((await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).status, 404);
    assert.deepEqual(await podNames(sim), []);
    const pod = (await simPods(sim.adminUrl)).find((p) => p.id === id);
    assert.equal(pod?.deletedBy, 'vanished');
    assert.equal(pod.status, 'TERMINATED');
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 404);
    await assertNoLeaks(sim.adminUrl);
  });

  test('slow-boot keeps port 22 unreachable and ssh.direct null until the delay has passed', async () => {
    const delayMs = 1500;
    await injectFault(sim.adminUrl, { fault: 'slow-boot', delayMs });
    const host = keyPair();
    const client = keyPair();
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: sshdPodBody('slow', host, client) });
    const createdAt = Date.parse(String(field(created.body, 'createdAt')));
    const id = String(field(created.body, 'id'));
    const port = await waitForSsh(sim, KEY, id);
    assert.ok(Date.now() - createdAt >= delayMs, 'ssh.direct appeared before the slow-boot delay');
    const conn = await sshConnect(port, host, client);
    assert.equal(await sshExec(conn, 'echo up'), 'up\n');
    conn.end();
    await deleteAll(sim);
    await assertNoLeaks(sim.adminUrl);
  });

  test('slow-link paces what the pod sends on connections opened after it, not before', async () => {
    const host = keyPair();
    const client = keyPair();
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: sshdPodBody('paced', host, client) });
    const id = String(field(created.body, 'id'));
    const port = await waitForSsh(sim, KEY, id);
    const before = await sshConnect(port, host, client);
    const bytesPerSecond = 20_000;
    await injectFault(sim.adminUrl, { fault: 'slow-link', podId: id, bytesPerSecond });
    const paced = await sshConnect(port, host, client);
    const startedAt = Date.now();
    assert.equal((await sshExec(paced, 'head -c 60000 /dev/zero')).length, 60_000);
    // A lower bound only: pacing makes it at least this slow, however loaded the machine is.
    assert.ok(Date.now() - startedAt >= 2500, `60000 bytes at ${bytesPerSecond} B/s took only ${Date.now() - startedAt} ms`);
    assert.equal((await sshExec(before, 'echo still')), 'still\n');
    paced.end();
    before.end();
    await deleteAll(sim);
    await assertNoLeaks(sim.adminUrl);
  });

  test('bad fault bodies are refused with 400', async () => {
    const response = await fetch(`${sim.adminUrl}/faults`, { method: 'POST', body: JSON.stringify({ fault: 'meteor', count: 1 }) });
    assert.equal(response.status, 400);
    const missing = await fetch(`${sim.adminUrl}/faults`, { method: 'POST', body: JSON.stringify({ fault: 'vanish' }) });
    assert.equal(missing.status, 400);
    const pending: unknown = await (await fetch(`${sim.adminUrl}/faults`)).json();
    assert.deepEqual(field(pending, 'faults'), []);
  });
});
