// The chaos report's measure of the controller's chance: leader terms read from its log, ended by the
// kills, and the leader time they give between a job's end and its pod's destruction.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leaderMsBetween, leaderTerms } from './leader-time.ts';

const t = (seconds: number): number => Date.parse('2026-12-01T12:00:00Z') + seconds * 1000;
const line = (seconds: number, msg: string): string => JSON.stringify({ level: 30, time: new Date(t(seconds)).toISOString(), msg });

void test('leader terms run from each "became leader" to the next kill, the last to the end', () => {
  const cut = line(70, 'became leader').slice(0, -3);
  const log = [line(0, 'starting'), line(5, 'became leader'), line(40, 'became leader'), cut, line(90, 'became leader'), ''].join('\n');
  const terms = leaderTerms(log, [t(20), t(60)], t(100));
  assert.deepEqual(terms, [{ from: t(5), to: t(20) }, { from: t(40), to: t(60) }, { from: t(90), to: t(100) }]);
  assert.equal(leaderMsBetween(terms, t(10), t(95)), 10_000 + 20_000 + 5_000);
  assert.equal(leaderMsBetween(terms, t(20), t(40)), 0, 'between two terms: no chance at all');
});
