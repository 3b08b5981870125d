// A long retrieval never starves the other runs: with a single worker, one run's results stream
// over a slow link (simulator fault slow-link) while another run is deleted; its deletion and
// finalizer complete while the transfer still runs, and the transfer then finishes verified.
// Ends with the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { injectFault } from '../runpod-sim/client.ts';
import { kubectl } from '../support/kubectl.ts';
import { hasCondition, runManifest, withWorld } from '../support/operator.ts';

const resultBytes = 3_000_000;
/** About 50 s for the results: far longer than a deletion takes, even on a loaded machine. */
const linkBytesPerSecond = 60_000;

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
    for (;;) {
      if (!(await world.run('other'))) break;
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
