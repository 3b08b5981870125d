// Issue 20 in the chaos suite: runs with spec.retry (kind `retry`) and the pre-retry kill window. Both
// came after seeds had been reported, so they draw from streams of their own: a seed's runs, faults,
// kill times and conditions stay what they were, with retry runs added and pre-retry in the rotation.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RunpodRunStatus } from '../../src/api/status.ts';
import { inBackoff, retryingWith } from './killer.ts';
import { Random } from './random.ts';
import { buildSchedule, killWindows } from './schedule.ts';
import { jobScript, planRun, retryExitCode, runManifest } from './workload.ts';

test('retry runs and the pre-retry window leave every other draw of a seed as it was', () => {
  for (const seed of [1, 7, 39, 1807]) {
    const now = buildSchedule({ runs: 30, seed });
    const before = buildSchedule({ runs: 30, seed, retryRuns: 0, windows: killWindows.filter((w) => w !== 'pre-retry') });
    assert.deepEqual(now.runs.filter((run) => run.kind !== 'retry'), before.runs);
    assert.deepEqual([now.faults, now.conditions], [before.faults, before.conditions]);
    const timing = (kills: typeof now.kills) => kills.map((k) => [k.atMs, k.deleteSent, k.restartAfterMs, k.refusedFirstLists]);
    assert.deepEqual(timing(now.kills), timing(before.kills));
    assert.equal(now.runs.filter((run) => run.kind === 'retry').length, 3, 'one retry run per ten runs');
  }
  const only = buildSchedule({ runs: 12, seed: 7, kills: 3, windows: ['pre-retry'], retryRuns: 4 });
  assert.deepEqual(only.kills.map((kill) => kill.window), ['pre-retry', 'pre-retry', 'pre-retry']);
  assert.equal(only.runs.filter((run) => run.kind === 'retry').length, 4);
  assert.equal(buildSchedule({ runs: 3, seed: 7 }).runs.filter((run) => run.kind === 'retry').length, 1, 'at least one');
});

test('a retry run\'s job exits 75 on every try before retry.limit + 1 and 0 on that one, telling its try in try.txt', () => {
  const run = { ...planRun(new Random(5), 0, 'retry', 0), jobSeconds: 0, resultBytes: 16, retryLimit: 2 };
  const manifest = runManifest(run) as { spec: { retry: unknown } };
  assert.deepEqual(manifest.spec.retry, { limit: 2, onExitCodes: [retryExitCode] });
  const dir = mkdtempSync(join(tmpdir(), 'chaos-retry-job-'));
  try {
    for (const [attempt, code] of [['1', 75], ['2', 75], ['3', 0]] as const) {
      const done = spawnSync('sh', ['-c', jobScript(run)], { cwd: dir, env: { ...process.env, RUNPOD_OPERATOR_ATTEMPT: attempt } });
      assert.equal(done.status, code, `try ${attempt}`);
      assert.equal(readFileSync(join(dir, 'output', 'try.txt'), 'utf8'), attempt);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the pre-retry window: a counted failure whose pod is to be deleted, or deleted with the next try not begun', () => {
  const retrying: RunpodRunStatus = {
    phase: 'Pending', reason: 'Retrying', retries: 1, nextTryAfter: '2026-12-01T12:00:10Z', pod: { id: 'p1', state: 'Deleting' },
    attempts: [{ name: 'r-1', gpuType: 'g', time: '2026-12-01T12:00:00Z', outcome: 'Created', podId: 'p1', reason: 'JobFailed' }],
  };
  assert.equal(retryingWith(retrying, 'p1'), true);
  assert.equal(retryingWith(retrying, 'p2'), false, 'a stray\'s delete is not the window');
  assert.equal(inBackoff(retrying), false, 'the pod is not deleted yet');
  const deleted = { ...retrying, pod: { id: 'p1', state: 'Deleted' } };
  assert.equal(inBackoff(deleted), true);
  assert.equal(inBackoff({ ...deleted, strayPods: ['p9'] }), false, 'a stray may still bill');
  const begun = { ...deleted, attempts: [...retrying.attempts!, { name: 'r-2', gpuType: 'g', time: '2026-12-01T12:00:11Z', outcome: 'Pending' as const, try: 2 }] };
  assert.equal(inBackoff(begun), false, 'try 2 recorded its attempt: past the window (pre-post\'s)');
  assert.equal(inBackoff({ ...deleted, reason: 'Provisioning' }), false);
});
