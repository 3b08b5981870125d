// The account-wide rules of the 2026-12 v2 docs, judged over HTTP: the spend limit on pod starts
// (create and the start action), GET /v2/account/limits, and scoped keys.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertNoLeaks, simPods } from './client.ts';
import { startSimulator, type RunningSimulator } from './server.ts';
import { call, field } from './testkit.ts';
import { eventually } from '../support/eventually.ts';

const KEY = 'sim-test-account-key-spend';
const READ_ONLY = 'sim-test-account-key-read-only';
const NO_ACCOUNT = 'sim-test-account-key-no-account-read';

const pod = (name: string, id: string): Record<string, unknown> => ({ name, image: 'x', gpu: { id } });

describe('account spend limit and scoped keys', () => {
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSimulator({
      apiKeys: [KEY],
      config: {
        // $1.50/h: an H100 ($2.99) never fits; one A40 ($0.40) and one 4090 ($0.69) do, a second 4090 does not.
        account: { spendRateUsdPerHour: 1.5 },
        keys: [
          { key: READ_ONLY, scopes: ['pods:read', 'account:read'] },
          { key: NO_ACCOUNT, scopes: ['pods:read', 'pods:write'] },
        ],
      },
    });
  });

  after(async () => {
    await sim.stop();
  });

  test('GET /v2/account/limits serves the configured spend rate', async () => {
    const limits = await call(sim, 'GET', '/v2/account/limits', { key: KEY });
    assert.equal(limits.status, 200);
    assert.deepEqual(limits.body, { spendRate: 1.5, serverlessWorkers: 5 });
  });

  test('a create that would exceed the spend rate is refused with a 400 naming the limit; room freed, it succeeds', async () => {
    const a40 = await call(sim, 'POST', '/v2/pods', { key: KEY, body: pod('a40', 'NVIDIA A40') });
    assert.equal(a40.status, 201);
    const rtx = await call(sim, 'POST', '/v2/pods', { key: KEY, body: pod('rtx', 'NVIDIA GeForce RTX 4090') });
    assert.equal(rtx.status, 201);
    // $0.40 + $0.69 run; another $0.69 would make $1.78 > $1.50.
    const refused = await call(sim, 'POST', '/v2/pods', { key: KEY, body: pod('over', 'NVIDIA GeForce RTX 4090') });
    assert.equal(refused.status, 400);
    assert.equal(refused.headers.get('content-type'), 'application/problem+json');
    assert.equal(field(refused.body, 'title'), 'Bad Request');
    assert.match(String(field(refused.body, 'detail')), /^Spend limit reached: this pod \(\$0\.69\/hr\) would bring the account's running resources to \$1\.78\/hr, above its spend limit of \$1\.50\/hr/);
    assert.equal((await simPods(sim.adminUrl)).filter((p) => p.name === 'over').length, 0, 'nothing was created');
    // Refused whatever the stock: an H100 alone is over the limit.
    const h100 = await call(sim, 'POST', '/v2/pods', { key: KEY, body: pod('h100', 'NVIDIA H100 80GB HBM3') });
    assert.match(String(field(h100.body, 'detail')), /Spend limit reached/);

    // A stopped pod frees its spend; starting it again is a pod start and is checked the same way.
    const rtxId = String(field(rtx.body, 'id'));
    assert.equal((await call(sim, 'POST', `/v2/pods/${rtxId}/action`, { key: KEY, body: { action: 'stop' } })).status, 200);
    const other = await call(sim, 'POST', '/v2/pods', { key: KEY, body: pod('fits-now', 'NVIDIA GeForce RTX 4090') });
    assert.equal(other.status, 201);
    const start = await call(sim, 'POST', `/v2/pods/${rtxId}/action`, { key: KEY, body: { action: 'start' } });
    assert.equal(start.status, 400);
    assert.match(String(field(start.body, 'detail')), /Spend limit reached/);
    assert.equal(field((await call(sim, 'GET', `/v2/pods/${rtxId}`, { key: KEY })).body, 'status'), 'EXITED');
    // Deleting a running pod frees room: the start goes through.
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${String(field(other.body, 'id'))}`, { key: KEY })).status, 204);
    assert.equal((await call(sim, 'POST', `/v2/pods/${rtxId}/action`, { key: KEY, body: { action: 'start' } })).status, 200);

    for (const p of await simPods(sim.adminUrl)) if (p.deletedAt === null) await call(sim, 'DELETE', `/v2/pods/${p.id}`, { key: KEY });
    await assertNoLeaks(sim.adminUrl);
  });

  test('a valid key lacking a scope gets 403 naming the scope; what its scopes cover works', async () => {
    const list = await call(sim, 'GET', '/v2/pods', { key: READ_ONLY });
    assert.equal(list.status, 200);
    const create = await call(sim, 'POST', '/v2/pods', { key: READ_ONLY, body: pod('nope', 'NVIDIA A40') });
    assert.equal(create.status, 403);
    assert.deepEqual(create.body, { status: 403, title: 'Forbidden', detail: 'API key is missing the required scope pods:write for POST /v2/pods' });
    assert.ok(create.headers.get('ratelimit'), 'a valid key\'s answer carries the quota headers');
    assert.equal((await simPods(sim.adminUrl)).filter((p) => p.name === 'nope').length, 0);

    const limits = await call(sim, 'GET', '/v2/account/limits', { key: NO_ACCOUNT });
    assert.equal(limits.status, 403);
    assert.match(String(field(limits.body, 'detail')), /account:read/);
    // The catalog needs no scope.
    assert.equal((await call(sim, 'GET', '/v2/catalog/gpus', { key: READ_ONLY })).status, 200);

    // A scoped key is an account of its own: it sees and deletes its own pods only.
    const own = await call(sim, 'POST', '/v2/pods', { key: NO_ACCOUNT, body: pod('scoped-own', 'NVIDIA A40') });
    assert.equal(own.status, 201);
    const id = String(field(own.body, 'id'));
    assert.equal((await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).status, 404);
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: NO_ACCOUNT })).status, 204);
    await eventually('the pod to be gone', async () => ((await simPods(sim.adminUrl)).every((p) => p.deletedAt !== null) ? true : undefined));
    await assertNoLeaks(sim.adminUrl);
  });
});
