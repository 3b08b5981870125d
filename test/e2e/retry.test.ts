// spec.retry end to end: a pod that vanishes mid-job is replaced by a new try whose results are the
// run's; a job exit code spec.retry names runs the job again, then the run ends with that try's verdict.
// The simulator's record proves no two pods of a run ever lived at once. Each test ends with the leak
// check (world.stop()).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { injectFault, simPodLogs, simPods, type SimPod } from '../runpod-sim/client.ts';
import { runManifest, withWorld } from '../support/operator.ts';
import { kubectl } from '../support/kubectl.ts';
import { eventually } from '../support/eventually.ts';

const ended = (run: { status?: { phase?: string } }) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed';

/** The run's pods one after the other: each deleted before the next was created. */
function assertNoOverlap(pods: readonly SimPod[]): void {
  const byCreate = [...pods].sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt));
  for (let i = 1; i < byCreate.length; i++) {
    const before = byCreate[i - 1];
    const after = byCreate[i];
    assert.ok(before?.deletedAt && after, `pod ${before?.id} was never deleted`);
    assert.ok(Date.parse(before.deletedAt) <= Date.parse(after.createdAt), `pod ${after.id} was created at ${after.createdAt}, before pod ${before.id} was deleted at ${before.deletedAt}`);
  }
}

describe('spec.retry', { concurrency: true }, () => {
  test('a pod that vanishes mid-job: the second try runs on a new pod and its results are the run\'s', () =>
    withWorld('retry-vanish', async (world) => {
      // The first try waits to be killed; the second writes its try number and ends.
      const job = { command: ['sh', '-c', 'mkdir -p output && echo "try $RUNPOD_OPERATOR_ATTEMPT" > output/which.txt && if [ "$RUNPOD_OPERATOR_ATTEMPT" = 1 ]; then sleep 600; fi'] };
      await world.apply(runManifest('vanish', { job, results: { path: 'output' }, retry: { limit: 1 } }));
      const running = await world.waitForRun('vanish', 'JobRunning', (r) => r.status?.reason === 'JobRunning' || ended(r), 60_000);
      const first = running.status?.pod?.id ?? '';
      assert.ok(first, JSON.stringify(running.status));
      await injectFault(world.sim.adminUrl, { fault: 'vanish', podId: first, afterMs: 0 });
      const retrying = await world.waitForRun('vanish', 'Retrying', (r) => r.status?.reason === 'Retrying' || ended(r), 90_000);
      assert.equal(retrying.status?.reason, 'Retrying', JSON.stringify(retrying.status));
      assert.match(retrying.status?.message ?? '', /^try 1 ended PodLost: .*; try 2 of 2 creates a pod once this one is deleted/);
      const run = await world.waitForRun('vanish', 'Succeeded', ended, 150_000);
      assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
      assert.equal(run.status?.retries, 1);
      assert.notEqual(run.status?.pod?.id, first);
      assert.equal(run.status?.attempts?.find((a) => a.podId === first)?.reason, 'PodLost');
      assert.equal(run.status?.attempts?.at(-1)?.try, 2);
      assert.equal(readFileSync(join(run.status?.results?.location ?? '', 'results', 'which.txt'), 'utf8'), 'try 2\n');
      const table = await kubectl(['get', 'rpr', 'vanish', '-n', world.namespace]);
      assert.match(table.stdout, /RETRIES[\s\S]*\bSucceeded\b.*\s1\s/, table.stdout);
      await world.waitForRun('vanish', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 30_000);
      const pods = await simPods(world.sim.adminUrl);
      assert.equal(pods.length, 2);
      assertNoOverlap(pods);
      await world.deleteRun('vanish');
    }));

  test('a job that exits 3 with onExitCodes [3] and limit 1 runs twice, then ends Failed/JobFailed with both tries recorded', () =>
    withWorld('retry-exit', async (world) => {
      const job = { command: ['sh', '-c', 'echo "try $RUNPOD_OPERATOR_ATTEMPT"; exit 3'] };
      await world.apply(runManifest('exit3', { job, retry: { limit: 1, onExitCodes: [3] } }));
      const run = await world.waitForRun('exit3', 'Failed', ended, 180_000);
      assert.equal(run.status?.reason, 'JobFailed', JSON.stringify(run.status));
      assert.equal(run.status?.job?.exitCode, 3);
      assert.equal(run.status?.retries, 1);
      const created = run.status?.attempts?.filter((a) => a.outcome === 'Created') ?? [];
      assert.deepEqual(created.map((a) => [a.try ?? 1, a.reason]), [[1, 'JobFailed'], [2, undefined]], JSON.stringify(run.status?.attempts));
      // The last try's verdict is retrieved as without retries: its log says which try it was.
      assert.equal(readFileSync(join(run.status?.results?.location ?? '', 'job.log'), 'utf8'), 'try 2\n');
      await world.waitForRun('exit3', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 30_000);
      const pods = await simPods(world.sim.adminUrl);
      assert.equal(pods.length, 2);
      assertNoOverlap(pods);
      await world.deleteRun('exit3');
    }));

  test('a job on a network volume writes a checkpoint, its pod vanishes, and the retry resumes from it in the volume\'s data center', () =>
    withWorld('retry-volume', async (world) => {
      // Try 1 checkpoints and waits to be killed; a try that finds the checkpoint finishes from it.
      const job = { command: ['sh', '-c', [
        'mkdir -p output',
        'if [ -f /workspace/ckpt/step ]; then echo "resumed from $(cat /workspace/ckpt/step) on try $RUNPOD_OPERATOR_ATTEMPT" > output/resume.txt; exit 0; fi',
        'echo "step-500 of try $RUNPOD_OPERATOR_ATTEMPT" > /workspace/ckpt/step', 'echo checkpointed', 'sleep 600',
      ].join('; ')] };
      await world.apply(runManifest('ckpt', { job, results: { path: 'output' }, retry: { limit: 2 }, networkVolume: { id: 'nv-ckpt', mountPath: '/workspace/ckpt' } }));
      const running = await world.waitForRun('ckpt', 'JobRunning', (r) => r.status?.reason === 'JobRunning' || ended(r), 60_000);
      assert.deepEqual(running.status?.networkVolume, { id: 'nv-ckpt', dataCenterId: 'US-TX-3' }, JSON.stringify(running.status));
      // The job's output reaches the container's console (the supervisor copies it there).
      const first = running.status?.pod?.id ?? '';
      await eventually('the checkpoint written', async () => ((await simPodLogs(world.sim.adminUrl, first)).includes('checkpointed') ? true : undefined));
      await injectFault(world.sim.adminUrl, { fault: 'vanish', podId: first, afterMs: 0 });
      const run = await world.waitForRun('ckpt', 'Succeeded', ended, 150_000);
      assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
      assert.equal(run.status?.retries, 1);
      assert.equal(readFileSync(join(run.status?.results?.location ?? '', 'results', 'resume.txt'), 'utf8'), 'resumed from step-500 of try 1 on try 2\n');
      await world.waitForRun('ckpt', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 30_000);
      const pods = await simPods(world.sim.adminUrl);
      assert.deepEqual(pods.map((pod) => pod.dataCenterId), ['US-TX-3', 'US-TX-3'], 'both tries in the volume\'s data center');
      assertNoOverlap(pods);
      await world.deleteRun('ckpt');
    }, { sim: { networkVolumes: [{ id: 'nv-ckpt', name: 'checkpoints', size: 20, dataCenter: 'US-TX-3' }] } }));
});

