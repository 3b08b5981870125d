// Failed retrieval tries are spaced in time, not only by the queue's requeue: every status write (each
// failed try says its count) brings a watch event and a reconcile at once, which would start the next
// try at once (a store or pod hammered by a hot loop). So after a failure at time T, no try starts
// before T + 2 s x 2^failures (at most 60 s); the reconcile in between waits, saying what was found.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyRetrievalOutcome, decide } from '../../../src/run/decide/decide.ts';
import { at, observe, pod, readyStatus, ssh, state } from '../fixture.ts';

const exited = state({}, { status: 'exited', startedAt: 1, endedAt: 2, exitCode: 0 });
const listed = (seconds: number) => ({ now: at(seconds), pods: { listedAt: at(seconds), items: [pod({ ssh })] }, podState: exited });

function afterFailures(failures: number, failedAtSecond: number) {
  const status = readyStatus();
  applyRetrievalOutcome(observe({ ...listed(failedAtSecond), retrievalFailures: failures - 1 }), status, { kind: 'unverified', message: 'the retrieval failed: preparing the results directory: exit code 1' });
  return status;
}

const cases = [
  { failures: 1, failedAt: 10, now: 10.5, wait: 3500 },
  { failures: 2, failedAt: 10, now: 11, wait: 7000 },
  { failures: 2, failedAt: 10, now: 18, wait: 0 },
  { failures: 6, failedAt: 10, now: 30, wait: 40_000 }, // 2 s x 2^6 is over the 60 s bound
  { failures: 6, failedAt: 10, now: 70, wait: 0 },
];

for (const c of cases) {
  test(`after ${c.failures} failed tries, the last at ${c.failedAt} s: at ${c.now} s ${c.wait > 0 ? `the run waits ${c.wait} ms` : 'the next try starts'}`, () => {
    const status = afterFailures(c.failures, c.failedAt);
    const d = decide(observe({ ...listed(c.now), retrievalFailures: c.failures, lastRetrievalFailureAt: at(c.failedAt) }, status));
    assert.equal(d.status.phase, 'Retrieving');
    assert.equal(d.status.reason, 'ResultsUnverified');
    assert.match(d.status.message ?? '', /preparing the results directory/, 'what the last try found stays the message');
    if (c.wait > 0) {
      assert.deepEqual(d.action, { type: 'none' });
      assert.deepEqual(d.requeue, { afterMs: c.wait });
    } else {
      assert.deepEqual(d.action, { type: 'retrieveResults' });
    }
  });
}
