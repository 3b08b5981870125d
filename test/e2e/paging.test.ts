// Runpod's pod list in pages (API-NOTES 2026-12 addendum, part 2) end to end: many runs of one account
// over pages of two, with stretches where every page after the first fails. No pod of a later page may
// look gone (PodLost, a second pod), the stray on the last page is swept, every run Succeeds, and the
// leak check holds.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { POD_ENV } from '../../src/pod/protocol.ts';
import { installScope } from '../../src/run/ownership.ts';
import { createRunpodClient } from '../../src/runpod/index.ts';
import { createLogger } from '../../src/log.ts';
import { countRequests, injectFault, simPods, simStats } from '../runpod-sim/client.ts';
import { hasCondition, runManifest, startWorld, testApiKey, unsuppressed } from '../support/operator.ts';
import { eventually, EVENTUALLY_MS } from '../support/eventually.ts';

const RUNS = 6;

test('many runs of one account over pages of two, later pages failing for a while: all Succeed with one pod each, the stray on the last page is swept', () => unsuppressed(async () => {
  await using world = await startWorld('paging', {
    // Pages of two: six runs and a stray are four pages per list. A budget for that many calls at a 2 s poll.
    sim: { pods: { pageSize: 2 }, rateLimits: { minute: { quota: 900, seconds: 60 }, hour: { quota: 30_000, seconds: 3600 } } },
  });
  await world.startController({ sweepInterval: '2s', strayGrace: '2s' });
  const names = Array.from({ length: RUNS }, (_, i) => `paged-${i}`);
  for (const name of names) await world.apply(runManifest(name, { job: { command: ['sleep', '25'] } }));
  for (const name of names) await world.waitForRun(name, 'PodReady', (run) => hasCondition(run, 'PodReady'), 120_000);

  // Created last, so on the last page: a pod of this install whose run never existed.
  const client = createRunpodClient({ apiKey: testApiKey, baseUrl: world.sim.baseUrl, logger: createLogger('silent') });
  const stray = await client.createPod({
    name: 'gone-1', image: 'img', gpu: { id: 'NVIDIA A40', count: 1 }, args: 'sleep 600',
    env: { [POD_ENV.cluster]: world.clusterId, [POD_ENV.scope]: installScope(world.namespace), [POD_ENV.run]: 'uid-gone' },
  });
  await client.close();
  // Every page after the first fails for a stretch of lists (a client tries each page 4 times): six lists,
  // ~12 s at a 2 s sweep on an idle machine. The jobs outlast it (25 s) even when a loaded machine spaces
  // the lists out (with 8 s jobs, a run at five files at once met only 20 of the 24 before the runs ended).
  await injectFault(world.sim.adminUrl, { fault: 'http-5xx', method: 'GET', path: '/v2/pods', pages: 'later', status: 503, count: 24 });
  const failedPages = async (): Promise<number> => countRequests(await simStats(world.sim.adminUrl), 'GET', '/v2/pods', 503);
  await eventually('every injected page failure to be met', async () => (await failedPages()) === 24, EVENTUALLY_MS, 250);
  const stillRunning = await Promise.all(names.map(async (name) => (await world.run(name))?.status?.phase));
  assert.deepEqual(stillRunning.filter((phase) => phase === 'Succeeded' || phase === 'Failed'), [], 'the stretch of failing pages fell while the runs ran');

  for (const name of names) {
    const run = await world.waitForRun(name, 'ended', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 180_000);
    assert.equal(run.status?.phase, 'Succeeded', `${name}: ${JSON.stringify(run.status)}`);
    // Six runs are more than one GPU type's stock: a first attempt may be refused for capacity.
    assert.equal(run.status?.attempts?.filter((attempt) => attempt.outcome === 'Created').length, 1, `${name} rented one pod: ${JSON.stringify(run.status?.attempts)}`);
  }
  const pods = await simPods(world.sim.adminUrl);
  assert.equal(pods.length, RUNS + 1, 'one pod per run, and the stray');
  await eventually('the stray on the last page to be swept', async () => (await simPods(world.sim.adminUrl)).find((pod) => pod.id === stray.id)?.deletedAt, EVENTUALLY_MS, 250);
  assert.ok(!world.logLines.some((line) => line.includes('PodLost')), 'no run lost its pod');
  for (const name of names) await world.deleteRun(name);
}));
