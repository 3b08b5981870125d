// Whole runs with the controller's Runpod traffic judged by Prism, an OpenAPI validator none of us
// wrote, reading openapi-v2.json (test/support/prism-judge.ts): the controller is given the judge's
// URL as its --runpod-api-url; any request or response Prism reports as a violation fails the test.
// The pods' own traffic (the watchdog calling the API from inside a pod) goes straight to the
// simulator: a pod reaches only the simulator's port, so pods are given the simulator's URL.
// One Prism for the file (it takes seconds to start), a world (simulator, namespace) per test.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { POD_ENV } from '../../src/pod/protocol.ts';
import { injectFault, simPods } from '../runpod-sim/client.ts';
import { hasCondition, runManifest, withWorld, type WorldOptions } from '../support/operator.ts';
import { type PrismJudge, startPrismJudge } from '../support/prism-judge.ts';

let judge: PrismJudge;
before(async () => {
  judge = await startPrismJudge({
    offSpec: [
      // The account spend limit (issue 8 §2-3): documented in API-NOTES.md's 2026-12 addendum, newer than
      // the stored openapi-v2.json (2026-08), so Prism has no route for it. Only this exact call is let through.
      { method: 'GET', path: '/v2/account/limits', source: 'API-NOTES.md, 2026-12 addendum: account spend limit' },
    ],
  });
});
after(async () => {
  await judge?.stop();
});

const judged: WorldOptions = {
  apiFront: (sim) => {
    judge.judge(sim.baseUrl);
    return judge.baseUrl;
  },
};
const ended = (run: { status?: { phase?: string } }) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed';
const job = (script: string) => ({ job: { command: ['sh', '-c', script] }, results: { path: 'output' } });

/** Judged per test: the exchanges of this test only. */
function assertJudgedClean(from: number, expect: { method: string; path: RegExp; status?: number }[]): void {
  const mine = judge.exchanges.slice(from);
  for (const e of expect) {
    assert.ok(mine.some((x) => x.method === e.method && e.path.test(x.path) && (e.status === undefined || x.status === e.status)),
      `expected ${e.method} ${e.path.source}${e.status ? ` ${e.status}` : ''} through the judge; saw ${[...new Set(mine.map((x) => `${x.method} ${x.path} ${x.status}`))].join(', ')}`);
  }
  judge.assertNoViolations();
}

describe('a whole run judged against openapi-v2.json', () => {
  test('success: catalog, create, list, results, delete confirmed by the lists (no per-pod GET); the pods call the simulator itself', async () => {
    const from = judge.exchanges.length;
    await withWorld('judged', async (world) => {
      await world.apply(runManifest('judged', { gpu: { auto: { minVramGb: 40 } }, ...job('mkdir -p output && echo judged > output/a.txt') }));
      const run = await world.waitForRun('judged', 'Succeeded', ended, 120_000);
      assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
      assert.ok(hasCondition(run, 'ResultsRetrieved'));
      const pods = await simPods(world.sim.adminUrl);
      assert.equal(pods.length, 1);
      assert.equal(pods[0]?.env[POD_ENV.apiUrl], world.sim.baseUrl, 'the watchdog calls the simulator, not the judge');
      await world.deleteRun('judged');
    }, judged);
    assertJudgedClean(from, [
      { method: 'GET', path: /^\/v2\/catalog\/gpus$/, status: 200 },
      { method: 'POST', path: /^\/v2\/pods$/, status: 201 },
      { method: 'GET', path: /^\/v2\/pods$/, status: 200 },
      { method: 'DELETE', path: /^\/v2\/pods\/[^/]+$/, status: 204 },
    ]);
    // The delete Runpod answered is confirmed by the lists polled for every run (the client's GET and its
    // 404 are judged in test/runpod/judged-contract.test.ts).
    assert.deepEqual(judge.exchanges.slice(from).filter((x) => x.method === 'GET' && /^\/v2\/pods\/[^/]+$/.test(x.path)), []);
  });

  test('trouble: no capacity (400), rate limited (429 with Retry-After), a 5xx, then cancel', async () => {
    const from = judge.exchanges.length;
    await withWorld('judgedtrouble', async (world) => {
      await injectFault(world.sim.adminUrl, { fault: 'no-capacity', count: 10, gpuTypeId: 'NVIDIA GeForce RTX 4090' });
      await injectFault(world.sim.adminUrl, { fault: 'rate-limit', method: 'POST', path: '/v2/pods', retryAfterSeconds: 1, count: 1 });
      await injectFault(world.sim.adminUrl, { fault: 'rate-limit', method: 'GET', path: '/v2/pods', retryAfterSeconds: 1, count: 1 });
      await injectFault(world.sim.adminUrl, { fault: 'http-5xx', method: 'GET', path: '/v2/pods', status: 503, count: 1 });
      await world.apply(runManifest('judgedtrouble'));
      const ready = await world.waitForRun('judgedtrouble', 'PodReady', (r) => hasCondition(r, 'PodReady'), 90_000);
      assert.equal(ready.status?.pod?.gpuType, 'NVIDIA A40');
      await world.apply(runManifest('judgedtrouble', { cancel: true }));
      await world.waitForRun('judgedtrouble', 'Cancelled', (r) => r.status?.reason === 'Cancelled' && r.status.pod?.state === 'Deleted', 60_000);
      await world.deleteRun('judgedtrouble');
    }, judged);
    assertJudgedClean(from, [
      { method: 'POST', path: /^\/v2\/pods$/, status: 400 },
      { method: 'POST', path: /^\/v2\/pods$/, status: 429 },
      { method: 'GET', path: /^\/v2\/pods$/, status: 429 },
      { method: 'GET', path: /^\/v2\/pods$/, status: 503 },
      { method: 'DELETE', path: /^\/v2\/pods\/[^/]+$/, status: 204 },
    ]);
  });
});
