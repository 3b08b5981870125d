// The v2 surface without fault injection: auth, validation, capacity, quotas, catalog, counters.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertNoLeaks, countRequests, simStats } from './client.ts';
import { CAPACITY_DETAIL } from './problems.ts';
import { startSimulator, type RunningSimulator } from './server.ts';
import { call, field } from './testkit.ts';

const KEY = 'sim-test-account-key-api';
const OTHER_KEY = 'sim-test-account-key-api-2';
const QUOTA_KEY = 'sim-test-account-key-api-3';

describe('v2 API', () => {
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSimulator({
      apiKeys: [KEY, OTHER_KEY, QUOTA_KEY],
      config: {
        gpuTypes: [
          { id: 'NVIDIA GeForce RTX 4090', displayName: 'RTX 4090', memoryInGb: 24, pricePerHour: { secure: 0.69, community: 0.34 }, stock: { 'EU-RO-1': 4 } },
          { id: 'NVIDIA A40', displayName: 'A40', memoryInGb: 48, pricePerHour: 0.4, stock: { 'EU-RO-1': 1, 'US-TX-3': 0 } },
          { id: 'NVIDIA RTX A6000', displayName: 'RTX A6000', memoryInGb: 48, pricePerHour: 0.49, stock: { 'US-TX-3': 7 } },
          { id: 'NVIDIA H100 80GB HBM3', displayName: 'H100 SXM', memoryInGb: 80, pricePerHour: 2.99, stock: { 'US-TX-3': 0 } },
        ],
        rateLimits: { minute: { quota: 50, seconds: 60 } },
      },
    });
  });

  after(async () => {
    await sim.stop();
  });

  test('a missing or unknown key is a 401 without quota headers', async () => {
    const missing = await call(sim, 'GET', '/v2/pods');
    assert.equal(missing.status, 401);
    assert.equal(missing.headers.get('content-type'), 'application/problem+json');
    assert.deepEqual(missing.body, { status: 401, title: 'Unauthorized', detail: 'missing bearer token' });
    assert.equal(missing.headers.get('ratelimit'), null);
    const unknown = await call(sim, 'GET', '/v2/pods', { key: 'not-a-key' });
    assert.equal(unknown.status, 401);
  });

  test('create bodies are validated like v2: unknown fields and missing names are 422, rule breaks 400', async () => {
    const v1Style = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'x', image: 'x', gpu: { id: 'NVIDIA A40' }, gpuTypeIds: ['NVIDIA A40'] } });
    assert.equal(v1Style.status, 422);
    assert.deepEqual(v1Style.body, { status: 422, title: 'Unprocessable Entity', detail: 'Request validation failed.', errors: ["$: additional properties 'gpuTypeIds' not allowed"] });
    const nested = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'x', image: 'x', gpu: { id: 'NVIDIA A40', gpuCount: 1 } } });
    assert.deepEqual(field(nested.body, 'errors'), ["$.gpu: additional properties 'gpuCount' not allowed"]);
    const noName = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { image: 'x', gpu: { id: 'NVIDIA A40' } } });
    assert.equal(noName.status, 422);
    assert.deepEqual(field(noName.body, 'errors'), ["$: missing property 'name'"]);
    const noImage = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'x', gpu: { id: 'NVIDIA A40' } } });
    assert.deepEqual(field(noImage.body, 'errors'), ["$: missing property 'image'"]);
    const badCloud = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'x', image: 'x', cloud: 'ALL', gpu: { id: 'NVIDIA A40' } } });
    assert.deepEqual(field(badCloud.body, 'errors'), ["$.cloud: value must be one of 'SECURE', 'COMMUNITY'"]);
    const noCompute = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'x', image: 'x' } });
    assert.equal(noCompute.status, 400);
    const cpu = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'x', image: 'x', cpu: { id: 'cpu3c' } } });
    assert.equal(cpu.status, 400);
    const badJson = await call(sim, 'POST', '/v2/pods', { key: KEY, body: '{"name":' });
    assert.equal(badJson.status, 400);
    const badAction = await call(sim, 'POST', '/v2/pods/abc/action', { key: KEY, body: { action: 'reboot' } });
    assert.deepEqual(badAction.body, {
      status: 422,
      title: 'Unprocessable Entity',
      detail: 'Request validation failed.',
      errors: ["$.action: value must be one of 'start', 'stop', 'restart', 'terminate'"],
    });
    await assertNoLeaks(sim.adminUrl);
  });

  test('stock: a create takes it, none left is the 400 capacity error, a delete returns it; the catalog follows', async () => {
    const availability = async (): Promise<unknown> => {
      const gpus = field((await call(sim, 'GET', '/v2/catalog/gpus?include=AVAILABILITY&product=POD', { key: KEY })).body, 'gpus') as unknown[];
      return field(gpus.find((gpu) => field(gpu, 'id') === 'NVIDIA A40'), 'availability');
    };
    assert.equal(await availability(), 'LOW');
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'only-a40', image: 'x', gpu: { id: 'NVIDIA A40' }, env: { K: 'v' } } });
    assert.equal(created.status, 201);
    assert.equal(field(created.body, 'cost'), 0.4);
    assert.equal(field(created.body, 'dataCenterId'), 'EU-RO-1');
    assert.deepEqual(field(created.body, 'env'), { K: 'v' });
    assert.match(String(field(created.body, 'createdAt')), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const id = String(field(created.body, 'id'));
    assert.match(id, /^[a-z0-9]{14}$/);
    assert.equal(await availability(), 'NONE');

    const refused = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'second', image: 'x', gpu: { id: 'NVIDIA A40' } } });
    assert.equal(refused.status, 400);
    assert.deepEqual(refused.body, { status: 400, title: 'Bad Request', detail: CAPACITY_DETAIL });
    const community = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'c', image: 'x', cloud: 'COMMUNITY', gpu: { id: 'NVIDIA RTX A6000' } } });
    assert.equal(community.status, 400, 'A6000 has no community price here');

    // Accounts are separate: another key neither sees nor deletes this pod.
    assert.equal((await call(sim, 'GET', `/v2/pods/${id}`, { key: OTHER_KEY })).status, 404);
    assert.deepEqual(field((await call(sim, 'GET', '/v2/pods', { key: OTHER_KEY })).body, 'pods'), []);
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: OTHER_KEY })).status, 404);

    assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
    assert.equal(await availability(), 'LOW');
    assert.equal((await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).status, 404);
    await assertNoLeaks(sim.adminUrl);
  });

  test('the catalog lets a client pick the cheapest type in stock with enough VRAM', async () => {
    const plain = await call(sim, 'GET', '/v2/catalog/gpus', { key: KEY });
    const first = (field(plain.body, 'gpus') as unknown[])[0];
    assert.deepEqual(first, {
      id: 'NVIDIA GeForce RTX 4090',
      name: 'RTX 4090',
      pool: null,
      manufacturer: 'NVIDIA',
      memory: 24,
      secure: true,
      community: true,
      price: { secure: 0.69, community: 0.34 },
      maxCount: { secure: 8, community: 8 },
    });
    assert.equal((await call(sim, 'GET', '/v2/catalog/gpus?include=AVAILABILITY', { key: KEY })).status, 400);

    const gpus = field((await call(sim, 'GET', '/v2/catalog/gpus?include=AVAILABILITY&product=POD', { key: KEY })).body, 'gpus') as unknown[];
    const pick = gpus
      .filter((gpu) => Number(field(gpu, 'memory')) >= 48 && field(gpu, 'availability') !== 'NONE')
      .sort((a, b) => Number(field(a, 'price', 'secure')) - Number(field(b, 'price', 'secure')))[0];
    assert.equal(field(pick, 'id'), 'NVIDIA A40');
    assert.deepEqual(field(pick, 'dataCenters'), [{ id: 'EU-RO-1', name: 'EU Romania 1', availability: 'LOW' }]);
    const h100 = gpus.find((gpu) => field(gpu, 'id') === 'NVIDIA H100 80GB HBM3');
    assert.equal(field(h100, 'availability'), 'NONE');
    assert.equal(field(h100, 'dataCenters'), undefined);
    const a6000 = gpus.find((gpu) => field(gpu, 'id') === 'NVIDIA RTX A6000');
    assert.equal(field(a6000, 'availability'), 'HIGH');
    const twoEach = field((await call(sim, 'GET', '/v2/catalog/gpus?include=AVAILABILITY&product=POD&count=2', { key: KEY })).body, 'gpus') as unknown[];
    assert.equal(field(twoEach.find((gpu) => field(gpu, 'id') === 'NVIDIA RTX A6000'), 'availability'), 'MEDIUM');

    const one = await call(sim, 'GET', `/v2/catalog/gpus/${encodeURIComponent('NVIDIA A40')}`, { key: KEY });
    assert.equal(field(one.body, 'memory'), 48);

    const dcs = field((await call(sim, 'GET', '/v2/catalog/datacenters?include=GPU_AVAILABILITY', { key: KEY })).body, 'dataCenters') as unknown[];
    assert.deepEqual(dcs.map((dc) => field(dc, 'id')), ['EU-RO-1', 'US-TX-3']);
    assert.deepEqual(field(dcs[1], 'gpuAvailability'), [
      { id: 'NVIDIA A40', name: 'A40', availability: 'NONE' },
      { id: 'NVIDIA RTX A6000', name: 'RTX A6000', availability: 'HIGH' },
      { id: 'NVIDIA H100 80GB HBM3', name: 'H100 SXM', availability: 'NONE' },
    ]);
    const europe = field((await call(sim, 'GET', '/v2/catalog/datacenters?regions=EUROPE', { key: KEY })).body, 'dataCenters') as unknown[];
    assert.deepEqual(europe.map((dc) => field(dc, 'id')), ['EU-RO-1']);
    assert.equal(field(europe[0], 'gpuAvailability'), undefined);
  });

  test('quotas: v2 headers on every authenticated answer, then 429 with Retry-After; per key', async () => {
    const remaining: number[] = [];
    let limited: Awaited<ReturnType<typeof call>> | undefined;
    for (let i = 0; i < 60 && !limited; i += 1) {
      const response = await call(sim, 'GET', '/v2/catalog/datacenters', { key: QUOTA_KEY });
      assert.equal(response.headers.get('ratelimit-policy'), '"minute";q=50;w=60, "hour";q=3000;w=3600');
      if (response.status === 429) limited = response;
      else remaining.push(Number(/"minute";r=(\d+)/.exec(response.headers.get('ratelimit') ?? '')?.[1]));
    }
    assert.ok(limited, 'no 429 within 60 requests');
    assert.equal(remaining.length, 50);
    assert.equal(remaining.at(-1), 0);
    assert.deepEqual(remaining, [...remaining].sort((a, b) => b - a));
    assert.match(limited.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    assert.ok(Number(limited.headers.get('retry-after')) <= 60);
    assert.match(limited.headers.get('ratelimit') ?? '', /^"minute";r=0;t=\d+, "hour";r=\d+;t=\d+$/);
    assert.deepEqual(limited.body, { status: 429, title: 'Too Many Requests', detail: 'rate limit exceeded for the minute window' });
    assert.equal((await call(sim, 'GET', '/v2/pods', { key: QUOTA_KEY })).status, 429);
    // Another account has its own quota.
    assert.equal((await call(sim, 'GET', '/v2/pods', { key: KEY })).status, 200);
  });

  test('stats count requests by method, path template and status', async () => {
    const stats = await simStats(sim.adminUrl);
    assert.equal(countRequests(stats, 'DELETE', '/v2/pods/{id}', 204), 1);
    assert.equal(countRequests(stats, 'POST', '/v2/pods', 422), 5);
    assert.equal(countRequests(stats, 'GET', '/v2/pods', 401), 2);
    assert.ok(countRequests(stats, 'GET', '/v2/catalog/datacenters', 429) >= 1);
    assert.ok(stats.requests.every((entry) => entry.count > 0));
    assert.equal(stats.total, stats.requests.reduce((sum, entry) => sum + entry.count, 0));
    const reset = await fetch(`${sim.adminUrl}/reset-stats`, { method: 'POST' });
    assert.equal(reset.status, 200);
    assert.equal((await simStats(sim.adminUrl)).total, 0);
  });
});
