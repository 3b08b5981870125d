// The arithmetic of the pod's clock offset: what one read of the pod's `now` proves about its clock,
// and the pod's times moved onto the controller's clock.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { clockOffsetSeconds, onControllerClock } from '../../src/pod/pod-clock.ts';
import { parsePodState } from '../../src/pod/state.ts';

const T = 1_796_212_700;
/** A read sent at T + sentMs and answered at T + answeredMs (controller ms), the pod answering `podNow`. */
const reading = (podNow: number | null, sentMs = 0, answeredMs = 100) => ({ podNow, sentAtMs: T * 1000 + sentMs, answeredAtMs: T * 1000 + answeredMs });

describe('clockOffsetSeconds (the pod\'s clock minus the controller\'s)', () => {
  const cases: [string, ReturnType<typeof reading>, number][] = [
    ['clocks that agree', reading(T), 0],
    ['clocks that agree, read late in the controller\'s second', reading(T, 900, 999), 0],
    ['the pod\'s second ticking over during the read', reading(T + 1, 950, 1050), 0],
    ['2 h ahead', reading(T + 7200), 7200],
    ['2 h behind', reading(T - 7200), -7200],
    ['2 h ahead, read over a slow link (5 s): the middle of what the read proves', reading(T + 7202, 0, 5000), 7200],
    ['5 s ahead, but the read took 10 s: nothing proved, 0', reading(T + 5, 0, 10_000), 0],
    ['a few seconds ahead, read fast', reading(T + 3), 3],
    ['the pod could not read its clock (now=-)', reading(null), 0],
    ['the pod\'s date printed nothing (now=0)', reading(0), 0],
  ];
  for (const [what, read, expected] of cases) {
    test(what, () => assert.equal(clockOffsetSeconds(read), expected));
  }

  test('an answer that came before its question is no reading', () => {
    assert.equal(clockOffsetSeconds({ podNow: T + 7200, sentAtMs: T * 1000 + 500, answeredAtMs: T * 1000 }), 0);
  });
});

describe('onControllerClock', () => {
  const line = (fields: string) => `runpod-operator-state v=1 now=${T + 7200} bootstrap=b2sK watchdog=b2sK job=exited started=${T + 7000} ended=${T + 7100} exit=0 pid=9 cancelled=0 retrieved=0 keep=0 ${fields} log=-`;

  test('moves every pod time by the offset, keeps the pod\'s own reading of now, and says what was applied', () => {
    const deleteFailed = Buffer.from(`deadline ${T + 7150} DELETE: HTTP 403`).toString('base64');
    const state = onControllerClock(parsePodState(line(`delete=${deleteFailed}`)), 7200);
    assert.deepEqual(
      { startedAt: state.job.startedAt, endedAt: state.job.endedAt, at: state.deleteFailed?.at, now: state.now, offset: state.clockOffsetSeconds },
      { startedAt: T - 200, endedAt: T - 100, at: T - 50, now: T + 7200, offset: 7200 },
    );
  });

  test('unknown times stay unknown; an offset of 0 changes nothing', () => {
    const parsed = parsePodState(line('delete=-').replace(`started=${T + 7000} ended=${T + 7100}`, 'started=- ended=-'));
    assert.deepEqual(onControllerClock(parsed, -7200).job, { ...parsed.job, startedAt: null, endedAt: null });
    assert.deepEqual(onControllerClock(parsed, 0), parsed);
  });
});
