// A long retrieval never starves the other runs: with a single worker, one run's results stream
// over a slow link (simulator fault slow-link) while another run is deleted; its deletion and
// finalizer complete while the transfer still runs, and the transfer then finishes verified. With
// one transfer slot, a second retrieval waits in line and says so; deleting the run that holds the
// slot aborts its transfer and the next one starts; a run whose results wait in line past its retrieve
// grace keeps its pod, since the controller renews the grace while it waits. Every test ends with the leak check.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { injectFault, simPodLogs } from '../runpod-sim/client.ts';
import { kubectl } from '../support/kubectl.ts';
import { hasCondition, runManifest, withWorld, type World } from '../support/operator.ts';

const resultBytes = 3_000_000;
/** About 50 s for the results: far longer than a deletion takes, even on a loaded machine. */
const linkBytesPerSecond = 60_000;


const waiting = /waiting for a transfer slot \(1 ahead, --max-concurrent-transfers\)/;

/** A run with large results whose pod's link is slowed as soon as its job runs. */
async function slowRetrieval(world: World, name: string, bytesPerSecond = linkBytesPerSecond): Promise<void> {
  await world.apply(runManifest(name, {
    job: { command: ['sh', '-c', `mkdir -p output && head -c ${resultBytes} /dev/urandom > output/big.bin && sleep 20`] },
    results: { path: 'output' },
  }));
  const run = await world.waitForRun(name, 'running its job', (r) => r.status?.reason === 'JobRunning', 120_000);
  await injectFault(world.sim.adminUrl, { fault: 'slow-link', podId: run.status!.pod!.id!, bytesPerSecond });
}

async function oneWaitingForASlot(world: World, names: string[]): Promise<string> {
  const until = Date.now() + 180_000;
  while (Date.now() < until) {
    for (const name of names) if (waiting.test((await world.run(name))?.status?.message ?? '')) return name;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  assert.fail(`none of ${names.join(', ')} ever waited for a transfer slot`);
}


describe('transfers', { concurrency: true }, () => {
  test('a deleted run\'s finalizer completes while another run\'s long retrieval holds the only worker', () =>
    withWorld('starve', async (world) => {
      await world.stopController();
      await world.startController({ maxConcurrentReconciles: '1', maxConcurrentTransfers: '1' });
      await world.apply(runManifest('big', {
        job: { command: ['sh', '-c', `mkdir -p output && head -c ${resultBytes} /dev/urandom > output/big.bin && sleep 15`] },
        results: { path: 'output' },
      }));
      await world.apply(runManifest('other', { job: { command: ['sleep', '600'] } }));
      const big = await world.waitForRun('big', 'running its job', (r) => r.status?.reason === 'JobRunning', 120_000);
      await injectFault(world.sim.adminUrl, { fault: 'slow-link', podId: big.status!.pod!.id!, bytesPerSecond: linkBytesPerSecond });
      await world.waitForRun('other', 'running its job', (r) => hasCondition(r, 'JobStarted'), 120_000);

      await world.waitForRun('big', 'retrieving', (r) => r.status?.phase === 'Retrieving', 120_000);
      const deleting = await kubectl(['delete', 'rpr', 'other', '-n', world.namespace, '--wait=false']);
      assert.equal(deleting.status, 0, deleting.stderr);
      const until = Date.now() + 300_000;
      while (await world.run('other')) {
        assert.ok(Date.now() < until, 'the deleted run was never gone');
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      const during = await world.run('big');
      assert.equal(during?.status?.results?.retrievedAt, undefined,
        `the deleted run's finalizer completed only after the long retrieval had ended: ${JSON.stringify(during?.status)}`);
      assert.equal(during?.status?.phase, 'Retrieving');

      const done = await world.waitForRun('big', 'ended', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 300_000);
      assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
      assert.equal(done.status?.results?.files, 1);
      assert.equal(done.status?.results?.bytes, resultBytes);
      await world.deleteRun('big');
    }));

  test('one transfer slot: the second retrieval waits in line and says so; deleting the run in the slot aborts its transfer and the next starts', () =>
    withWorld('slots', async (world) => {
      await world.stopController();
      await world.startController({ maxConcurrentTransfers: '1' });
      await Promise.all([slowRetrieval(world, 'first'), slowRetrieval(world, 'second')]);
      const inLine = await oneWaitingForASlot(world, ['first', 'second']);
      const inSlot = inLine === 'first' ? 'second' : 'first';
      const holder = await world.run(inSlot);
      assert.equal(holder?.status?.phase, 'Retrieving', JSON.stringify(holder?.status));
      assert.doesNotMatch(holder?.status?.message ?? '', waiting);

      await world.deleteRun(inSlot);
      const next = await world.waitForRun(inLine, 'in the slot', (r) => r.status?.phase !== 'Retrieving' || !waiting.test(r.status.message ?? ''), 60_000);
      assert.equal(next.status?.phase, 'Retrieving', JSON.stringify(next.status));
      assert.equal(next.status?.results?.retrievedAt, undefined, 'still transferring');
      await world.deleteRun(inLine);
    }));

  test('one transfer slot: a run whose results wait in line past its retrieve grace keeps its pod (the controller renews the grace) and succeeds', () =>
    withWorld('queued-grace', async (world) => {
      await world.stopController();
      await world.startController({ maxConcurrentTransfers: '1' });
      // About 75 s for its results.
      await slowRetrieval(world, 'first', 40_000);
      await world.waitForRun('first', 'in the slot', (r) => r.status?.phase === 'Retrieving', 120_000);
      // Small results and the shortest grace: its job ends while the first transfer holds the only slot.
      const graceSeconds = 30;
      await world.apply(runManifest('second', {
        job: { command: ['sh', '-c', 'mkdir -p output && echo done > output/a.txt'] }, results: { path: 'output' },
        limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 60, retrieveGraceSeconds: graceSeconds },
      }));
      await world.waitForRun('second', 'waiting for the slot', (r) => waiting.test(r.status?.message ?? ''), 120_000);
      const done = await world.waitForRun('second', 'ended', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 300_000);
      assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
      assert.equal(done.status?.results?.files, 1);
      // The premise: its results waited longer than the grace and the margin (5 s) after the job's end.
      const waited = Date.parse(done.status?.results?.retrievedAt ?? '') - Date.parse(done.status?.job?.finishedAt ?? '');
      assert.ok(waited > (graceSeconds + 5) * 1000, `the results waited only ${waited} ms: the test proves nothing`);
      // Its watchdog may delete it once the results are marked retrieved (a race with the controller's delete), never for the grace.
      const podLog = await simPodLogs(world.sim.adminUrl, done.status?.pod?.id ?? '');
      assert.doesNotMatch(podLog, /results were not retrieved within/, 'its watchdog did not delete it unfetched');
      const first = await world.waitForRun('first', 'ended', (r) => r.status?.phase === 'Succeeded' || r.status?.phase === 'Failed', 300_000);
      assert.equal(first.status?.phase, 'Succeeded', JSON.stringify(first.status));
      await world.deleteRun('first');
      await world.deleteRun('second');
    }));
});
