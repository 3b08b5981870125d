// GET /v2/pods in pages (config pods.pageSize): the shape the 2026-12 addendum gives, a cursor over
// the creation order (so a pod live during a whole walk is never missing from it, whatever is created
// or deleted between pages), and a strict answer to a cursor it did not issue or that expired.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertNoLeaks, injectFault } from './client.ts';
import { startSimulator, type RunningSimulator } from './server.ts';
import { call, field } from './testkit.ts';

const KEY = 'sim-test-paging-account-key';
const OTHER_KEY = 'sim-test-paging-other-key';

interface Page { ids: string[]; nextCursor: unknown; hasNextPage: unknown }

async function page(sim: RunningSimulator, cursor?: string, key = KEY): Promise<Page> {
  const answer = await call(sim, 'GET', `/v2/pods${cursor === undefined ? '' : `?cursor=${encodeURIComponent(cursor)}`}`, { key });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const pods = field(answer.body, 'pods') as { id: string }[];
  return { ids: pods.map((pod) => pod.id), nextCursor: field(answer.body, 'pagination', 'nextCursor'), hasNextPage: field(answer.body, 'pagination', 'hasNextPage') };
}

async function createPod(sim: RunningSimulator, name: string, key = KEY): Promise<string> {
  const created = await call(sim, 'POST', '/v2/pods', { key, body: { name, image: 'img', gpu: { id: 'NVIDIA A40' }, args: 'sleep 600' } });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return String(field(created.body, 'id'));
}

async function deletePod(sim: RunningSimulator, id: string): Promise<void> {
  assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
}

describe('paged pod lists', () => {
  let sim: RunningSimulator;
  const ids: string[] = [];

  before(async () => {
    sim = await startSimulator({
      apiKeys: [KEY, OTHER_KEY],
      config: {
        pods: { pageSize: 2, cursorTtlMs: 2000 },
        gpuTypes: [{ id: 'NVIDIA A40', displayName: 'A40', memoryInGb: 48, pricePerHour: 0.4, stock: { 'EU-RO-1': 12 } }],
        rateLimits: { enabled: false },
      },
    });
    for (let i = 0; i < 5; i++) ids.push(await createPod(sim, `paged-${i}`));
  });

  after(async () => {
    try {
      for (const id of ids) await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY });
      await assertNoLeaks(sim.adminUrl, 5000);
    } finally {
      await sim.stop();
    }
  });

  test('pages of pageSize in creation order, each with pagination beside pods; the last says there is no next page', async () => {
    const first = await page(sim);
    assert.deepEqual(first.ids, ids.slice(0, 2));
    assert.equal(first.hasNextPage, true);
    assert.equal(typeof first.nextCursor, 'string');
    const second = await page(sim, String(first.nextCursor));
    assert.deepEqual(second.ids, ids.slice(2, 4));
    assert.equal(second.hasNextPage, true);
    const last = await page(sim, String(second.nextCursor));
    assert.deepEqual(last, { ids: ids.slice(4), nextCursor: null, hasNextPage: false });
    // A cursor may be asked for again (a client repeats a page whose answer it lost).
    assert.deepEqual((await page(sim, String(first.nextCursor))).ids, ids.slice(2, 4));
  });

  test('a pod live during the whole walk is on it once, whatever is created or deleted between pages', async () => {
    const first = await page(sim);
    // Between pages: one pod already read and one not yet read are deleted, and a new one is created.
    const [readAlready, , , notYetRead] = ids;
    await deletePod(sim, readAlready ?? '');
    await deletePod(sim, notYetRead ?? '');
    const createdMeanwhile = await createPod(sim, 'paged-new');
    const walked = [...first.ids];
    let cursor = first.nextCursor;
    while (typeof cursor === 'string') {
      const next = await page(sim, cursor);
      walked.push(...next.ids);
      cursor = next.nextCursor;
    }
    const liveThroughout = ids.filter((id) => id !== readAlready && id !== notYetRead);
    for (const id of liveThroughout) assert.equal(walked.filter((seen) => seen === id).length, 1, `${id} is on the walk once: ${walked.join(',')}`);
    assert.ok(!walked.includes(notYetRead ?? ''), 'a pod deleted before its page was read is not on it');
    assert.ok(walked.includes(createdMeanwhile), 'a pod created during the walk comes on a later page (the order is by creation)');
    ids.splice(0, ids.length, ...liveThroughout, createdMeanwhile);
  });

  test('a fault with pages: later hits only the pages after the first', async () => {
    await injectFault(sim.adminUrl, { fault: 'http-5xx', method: 'GET', path: '/v2/pods', pages: 'later', status: 503 });
    const first = await page(sim);
    const failed = await call(sim, 'GET', `/v2/pods?cursor=${String(first.nextCursor)}`, { key: KEY });
    assert.equal(failed.status, 503);
    assert.deepEqual((await page(sim, String(first.nextCursor))).ids.length, 2, 'the same cursor works once the fault is spent');
  });

  test('a cursor it never issued, another account\'s, or an expired one is a 400 problem, not an empty page', async () => {
    const expectRefused = async (cursor: string, key = KEY) => {
      const answer = await call(sim, 'GET', `/v2/pods?cursor=${encodeURIComponent(cursor)}`, { key });
      assert.equal(answer.status, 400, JSON.stringify(answer.body));
      assert.deepEqual(answer.body, { status: 400, title: 'Bad Request', detail: 'invalid or expired pagination cursor' });
    };
    await expectRefused('made-up');
    const issued = String((await page(sim)).nextCursor);
    await expectRefused(issued, OTHER_KEY);
    await sleep(2200); // past cursorTtlMs
    await expectRefused(issued);
  });
});

test('without pods.pageSize the list is one answer without pagination, and a cursor is ignored', async () => {
  const sim = await startSimulator({ apiKeys: [KEY], config: { rateLimits: { enabled: false } } });
  try {
    const id = await createPod(sim, 'unpaged');
    for (const path of ['/v2/pods', '/v2/pods?cursor=anything']) {
      const answer = await call(sim, 'GET', path, { key: KEY });
      assert.equal(answer.status, 200);
      assert.deepEqual(Object.keys(answer.body as object), ['pods']);
      assert.deepEqual((field(answer.body, 'pods') as { id: string }[]).map((pod) => pod.id), [id]);
    }
    await deletePod(sim, id);
    await assertNoLeaks(sim.adminUrl, 5000);
  } finally {
    await sim.stop();
  }
});
