// The job's times on the controller's clock when the pod's clock stepped between a time's writing and
// the read that carries it: each read moves the pod's times by the offset it measures, so an end
// written before a 2 h step ahead arrives 2 h early (and one before a step back, 2 h late). Chaos seed
// 1807 (chaos-058-success): the pod's clock jumped 2 h ahead just after its job ended; the next read
// put the end 2 h in the past and the run ended ResultsUnverified at once, its pod deleted with its
// results. What the controller already knows bounds them: the job started after the pod was ready
// (the controller starts it), it ended after it started, and neither is later than the read.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decide } from '../../../src/run/decide/decide.ts';
import type { PodView } from '../../../src/run/decide/model.ts';
import * as fixture from '../fixture.ts';
import { at, spec, ssh, state, unixAt } from '../fixture.ts';

const pod = (over: Partial<PodView> = {}): PodView => fixture.pod({ ssh, ...over });
const oneHourGrace = spec({}, { maxRuntimeSeconds: 86_400, retrieveGraceSeconds: 3600 });
const ready = () => fixture.readyStatus({ readyAt: 2, spec: oneHourGrace, pod: pod() });
const read = (seconds: number, status = ready(), job: Parameters<typeof state>[1] = {}) =>
  decide(fixture.observeAt(seconds, status, { spec: oneHourGrace, podState: state({}, job) }, [pod()]));

describe('pod times bounded by what the controller knows', () => {
  test('an end that arrives 2 h before the start (the clock stepped ahead after it): the end is the start, the run retrieves', () => {
    const running = read(30, ready(), { status: 'running', startedAt: unixAt(10) });
    assert.equal(running.status.job?.startedAt, at(10).toISOString());
    const ended = read(40, running.status, { status: 'exited', startedAt: unixAt(10) - 7200, endedAt: unixAt(35) - 7200, exitCode: 0 });
    assert.equal(ended.status.phase, 'Retrieving', ended.status.message);
    assert.equal(ended.status.job?.startedAt, at(10).toISOString(), 'a recorded start stays');
    assert.equal(ended.status.job?.finishedAt, at(10).toISOString());
    assert.deepEqual(ended.action, { type: 'retrieveResults' });
  });

  test('an end that arrives in the future (the clock stepped back after it): the end is the read\'s time', () => {
    const ended = read(40, ready(), { status: 'exited', startedAt: unixAt(10), endedAt: unixAt(35) + 7200, exitCode: 0 });
    assert.equal(ended.status.job?.finishedAt, at(40).toISOString());
  });

  test('a start first seen with its end, 2 h before the pod was ready: the start is the readiness', () => {
    const ended = read(40, ready(), { status: 'exited', startedAt: unixAt(10) - 7200, endedAt: unixAt(35) - 7200, exitCode: 0 });
    assert.equal(ended.status.job?.startedAt, at(2).toISOString());
    assert.equal(ended.status.job?.finishedAt, at(2).toISOString());
    assert.equal(ended.status.phase, 'Retrieving', ended.status.message);
  });

  test('times that fit are taken as they are', () => {
    const ended = read(40, ready(), { status: 'exited', startedAt: unixAt(10), endedAt: unixAt(35), exitCode: 0 });
    assert.equal(ended.status.job?.startedAt, at(10).toISOString());
    assert.equal(ended.status.job?.finishedAt, at(35).toISOString());
  });
});
