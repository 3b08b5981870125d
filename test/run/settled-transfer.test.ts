// A pooled retrieval that settled verified, whose pod then vanished before any reconcile took the
// outcome from the pool: the committed results are the run's, so it ends Succeeded with them (the
// reconciler adopts the store's commit once the transfer is settled). Driven by a real
// RunReconciler with a pool the test controls, against a real kube-apiserver and the simulator:
// nothing reconciles between the settle and the vanish. Ends with the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import type { RunpodRun } from '../../src/api/runpodrun.ts';
import type { RetrievalOutcome } from '../../src/run/decide/decide.ts';
import { TransferPool } from '../../src/run/act/transfers.ts';
import { countRequests, injectFault, simPods, simStats } from '../runpod-sim/client.ts';
import { reconcilerWorld } from './reconciler-world.ts';

const apiKey = 'rpa_SETTLED_TRANSFER_KEY_0123456789';
const resultBytes = 100_000;

test('a transfer that settled verified before its pod vanished still gives the run its results: Succeeded', async () => {
  const world = await reconcilerWorld('settled-transfer', apiKey, { pollIntervalMs: 500, ambiguousLookupMs: 1000 });
  const { namespace, sim } = world;
  const created = await world.createRun('settled', {
    job: { command: ['sh', '-c', `mkdir -p output && head -c ${resultBytes} /dev/urandom > output/r.bin`] },
    results: { path: 'output' },
  });
  const uid = created.metadata.uid;
  const { reconciler } = world.reconciler();
  let settled!: () => void;
  const whenSettled = new Promise<void>((resolve) => {
    settled = resolve;
  });
  // The controller's onSettled asks for a reconcile; here the test decides when the next one runs.
  const transfers = new TransferPool<RetrievalOutcome>({ maxConcurrent: 1, onSettled: () => settled() });
  const key = `${namespace}/settled`;
  const get = () => world.get('settled');
  /** Reconciles (as the queue would, without its backoff) until `done`; a bound, not a speed claim. */
  const reconcileUntil = async (what: string, done: (run: RunpodRun) => boolean, timeoutMs: number): Promise<RunpodRun> => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      await reconciler.reconcile(key, { transfers });
      const run = await get();
      if (done(run)) return run;
      assert.ok(Date.now() < until, `never ${what}: ${JSON.stringify(run.status)}`);
      await delay(200);
    }
  };
  try {
    // Up to the reconcile that starts the retrieval in the pool; none runs after it until the pod is gone.
    await reconcileUntil('started a retrieval', () => transfers.look(uid) !== undefined, 180_000);
    await whenSettled;
    const view = transfers.look(uid);
    assert.ok(view?.state === 'settled' && view.outcome.ok && view.outcome.value.kind === 'verified', `the transfer settled verified: ${JSON.stringify(view)}`);
    const podId = (await get()).status?.pod?.id;
    assert.ok(podId, 'the run records its pod');

    await injectFault(sim.adminUrl, { fault: 'vanish', podId });
    const vanished = (await simPods(sim.adminUrl)).find((pod) => pod.id === podId);
    assert.equal(vanished?.deletedBy, 'vanished');

    const done = await reconcileUntil('ended', (run) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed', 60_000);
    assert.equal(done.status?.phase, 'Succeeded', JSON.stringify(done.status));
    assert.equal(done.status?.results?.files, 1);
    assert.equal(done.status?.results?.bytes, resultBytes);
    assert.ok(done.status?.results?.retrievedAt, 'the results are recorded as retrieved');
    assert.equal(transfers.look(uid), undefined, 'the pool let the outcome go once a status recorded it');
    assert.equal(countRequests(await simStats(sim.adminUrl), 'POST', '/v2/pods'), 1, 'no second pod was rented for results already held');
  } finally {
    await transfers.abortAll('the test ended');
    await world.close();
  }
});
