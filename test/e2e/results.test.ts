// What a result set may hold, end to end: a symlink is a file of it (stored as a link, or refused by
// name), and a set larger than results.maxBytes is not retrieved (Failed/ResultsTooLarge, the pod
// deleted); a job.log that still grows is taken as it was; a try that fails outright is counted and
// said. Every test ends with the leak check.
import assert from 'node:assert/strict';
import { lstatSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { simPods } from '../runpod-sim/client.ts';
import { runManifest, withWorld } from '../support/operator.ts';

test('results larger than results.maxBytes: Failed/ResultsTooLarge, nothing stored, the pod deleted', () =>
  withWorld('toolarge', async (world) => {
    await world.apply(runManifest('toolarge', {
      job: { command: ['sh', '-c', 'mkdir -p output && head -c 3000 /dev/zero > output/a.bin && head -c 3000 /dev/zero > output/b.bin'] },
      results: { path: 'output', maxBytes: '4Ki' },
    }));
    const run = await world.waitForRun('toolarge', 'Failed', (r) => r.status?.phase === 'Failed', 90_000);
    assert.equal(run.status?.reason, 'ResultsTooLarge', JSON.stringify(run.status));
    assert.match(run.status?.message ?? '', /6000 bytes in 2 files.*spec\.results\.maxBytes \(4Ki = 4096 bytes\)/);
    assert.equal(run.status?.results?.retrievedAt, undefined);
    const deleted = await world.waitForRun('toolarge', 'pod deleted', (r) => r.status?.pod?.state === 'Deleted', 60_000);
    assert.equal(deleted.status?.pod?.state, 'Deleted');
    assert.ok((await simPods(world.sim.adminUrl)).every((pod) => pod.deletedAt), 'the pod is deleted');
    await world.deleteRun('toolarge');
  }));

test('a symlink inside the results is stored as the same link and counted; the run succeeds', () =>
  withWorld('links', async (world) => {
    await world.apply(runManifest('links', {
      job: { command: ['sh', '-c', 'mkdir -p output/ckpt-1 && echo w > output/ckpt-1/w.bin && ln -s ckpt-1 output/latest'] },
      results: { path: 'output' },
    }));
    const run = await world.waitForRun('links', 'ended', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 90_000);
    assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
    assert.equal(run.status?.results?.files, 2, 'the link is a file of the result set');
    const results = join(run.status?.results?.location ?? '', 'results');
    assert.ok(lstatSync(join(results, 'latest')).isSymbolicLink());
    assert.equal(readlinkSync(join(results, 'latest')), 'ckpt-1');
    assert.equal(readFileSync(join(results, 'latest', 'w.bin'), 'utf8'), 'w\n');
    await world.deleteRun('links');
  }));

test('a symlink leaving the results is refused by name: never "verified", never followed', () =>
  withWorld('badlink', async (world) => {
    await world.apply(runManifest('badlink', {
      job: { command: ['sh', '-c', 'mkdir -p output && echo r > output/r.txt && ln -s ../.pod output/state'] },
      results: { path: 'output' },
    }));
    const run = await world.waitForRun('badlink', 'ResultsUnverified', (r) => r.status?.reason === 'ResultsUnverified', 90_000);
    assert.match(run.status?.message ?? '', /refused symlinks \(state -> \.\.\/\.pod: points outside the results directory\)/);
    assert.equal(run.status?.results?.retrievedAt, undefined);
    await world.deleteRun('badlink');
  }));

test('a job that leaves a process writing to job.log (nohup, tensorboard): the log is taken up to its size then, the run succeeds', () =>
  withWorld('growinglog', async (world) => {
    await world.apply(runManifest('growinglog', {
      job: { command: ['sh', '-c', 'mkdir -p output && echo r > output/r.txt && echo the job ran && (while :; do echo tick; sleep 0.002; done) &'] },
      results: { path: 'output' },
      limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 60, retrieveGraceSeconds: 30 },
    }));
    const run = await world.waitForRun('growinglog', 'ended', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 120_000);
    assert.equal(run.status?.phase, 'Succeeded', JSON.stringify(run.status));
    assert.equal(run.status?.results?.files, 1);
    const location = run.status?.results?.location ?? '';
    assert.equal(readFileSync(join(location, 'results', 'r.txt'), 'utf8'), 'r\n');
    const log = readFileSync(join(location, 'job.log'), 'utf8');
    assert.match(log, /the job ran/);
    assert.ok(log.endsWith('\n'), 'the log is whole lines as they were when its size was read');
    await world.deleteRun('growinglog');
  }));

test('a retrieval that fails outright (results.path is a file) is counted and said in the status, try after try', () =>
  withWorld('pathisfile', async (world) => {
    await world.apply(runManifest('pathisfile', {
      job: { command: ['sh', '-c', 'echo not a directory > output'] },
      results: { path: 'output' },
      limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 60, retrieveGraceSeconds: 30 },
    }));
    const first = await world.waitForRun('pathisfile', 'ResultsUnverified', (r) => r.status?.reason === 'ResultsUnverified' || r.status?.phase === 'Failed', 120_000);
    assert.equal(first.status?.phase, 'Retrieving', JSON.stringify(first.status));
    assert.match(first.status?.message ?? '', /try 1\b.*preparing the results directory/);
    assert.ok((first.status?.message ?? '').length <= 1024, `a bounded message: ${first.status?.message?.length}`);
    const second = await world.waitForRun('pathisfile', 'a second counted try', (r) => /try [2-9]/.test(r.status?.message ?? '') || r.status?.phase === 'Failed', 60_000);
    assert.equal(second.status?.phase, 'Retrieving', JSON.stringify(second.status));
    // And in the log, where a later reason (a refused key, a deadline) cannot hide it.
    assert.ok(world.logLines.some((line) => line.includes('"msg":"a retrieval try was not verified"') && line.includes('"run":"pathisfile"') && line.includes('preparing the results directory')),
      'each failed try is logged with why');
    await world.deleteRun('pathisfile');
  }));
