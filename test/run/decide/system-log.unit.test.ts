// A pod without an SSH port explains itself in Runpod's system lines: read 20 s after the create and
// then every minute; a refused pull ends the run ImagePullFailed at once, any other line is kept and
// quoted when readiness times out.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decide, learn } from '../../../src/run/decide/decide.ts';
import { at, createdStatus, observe, pod, spec } from '../fixture.ts';

/** At `seconds`, a list showing the created pod without an SSH port (still pulling its image); readyTimeoutSeconds 60 unless `s`. */
const pulling = (seconds: number, status = createdStatus(), s = spec()) =>
  observe({ now: at(seconds), spec: s, pods: { listedAt: at(seconds), items: [pod({ status: 'RUNNING' })] } }, status);

describe('a pod\'s system lines', () => {
  test('read 20 s after the create, then not again for a minute', () => {
    const slow = spec({}, { readyTimeoutSeconds: 900 });
    const status = createdStatus({ spec: slow });
    assert.notEqual(decide(pulling(19, status, slow)).action.type, 'readSystemLog');
    const due = decide(pulling(20, status, slow));
    assert.deepEqual(due.action, { type: 'readSystemLog', podId: 'p1' });
    const read = learn(pulling(20, status, slow), due.status, { step: 'readSystemLog', result: { podId: 'p1', lines: ['Pulling image img', 'Pulling fs layer'] } });
    assert.equal(read.pod?.systemLog, 'Pulling fs layer');
    assert.notEqual(decide(pulling(79, read, slow)).action.type, 'readSystemLog');
    assert.deepEqual(decide(pulling(80, read, slow)).action, { type: 'readSystemLog', podId: 'p1' });
    assert.match(decide(pulling(30, read, slow)).status.message ?? '', /waiting for its SSH port; Runpod's last word on it: "Pulling fs layer"/);
  });

  test('a refused pull: Failed/ImagePullFailed quoting the line, the pod deleted, no other GPU type tried', () => {
    const due = decide(pulling(20));
    const lines = ['Pulling image img', "Error response from daemon: pull access denied for img, repository does not exist or may require 'docker login': denied: unauthorized", 'Back-off pulling image img'];
    const read = learn(pulling(20), due.status, { step: 'readSystemLog', result: { podId: 'p1', lines } });
    assert.equal(read.phase, 'Failed');
    assert.equal(read.reason, 'ImagePullFailed');
    assert.match(read.message ?? '', /^Runpod could not pull img on pod r-1: "Error response from daemon: pull access denied for img.*unauthorized"; the pod is deleted$/);
    assert.equal(read.pod?.state, 'Deleting');
    assert.equal(read.attempts?.[0]?.outcome, 'NotReady');
    const next = decide(pulling(21, read));
    assert.deepEqual(next.action, { type: 'deletePod', podId: 'p1' });
  });

  test('nothing telling: the readiness timeout quotes the last line', () => {
    const read = learn(pulling(20), decide(pulling(20)).status, { step: 'readSystemLog', result: { podId: 'p1', lines: ['Pulling image img'] } });
    const late = decide(pulling(61, read));
    assert.equal(late.status.attempts?.[0]?.outcome, 'NotReady');
    assert.match(late.status.attempts?.[0]?.message ?? '', /within 60s; Runpod's last word on it: "Pulling image img"$/);
  });

  test('an answer about another pod (an older read) changes nothing', () => {
    const status = decide(pulling(20)).status;
    assert.deepEqual(learn(pulling(20), status, { step: 'readSystemLog', result: { podId: 'p0', lines: ['unauthorized'] } }), status);
  });
});
