// Runs waiting for room under the account spend limit: of those that see room in the same pod list,
// only as many send their create as that room takes; the others wait without a call (chaos seed 29 at
// N=100: 1026 refused creates for 40 created, up to 92 a minute, each refusal followed by two more calls).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SpendRoom, claimVisibleAfterMs } from '../../src/run/spend-room.ts';

const t0 = Date.parse('2026-12-01T12:00:00Z');
const at = (seconds: number): Date => new Date(t0 + seconds * 1000);
const spend = { limitUsdPerHour: 1.8, runningUsdPerHour: 0.69, podUsdPerHour: 0.69 };

void test('room for one pod goes to one run; the others are held back until a list shows where it went', () => {
  const room = new SpendRoom();
  assert.equal(room.claim('a', spend, at(0), at(1)), true);
  assert.equal(room.claim('b', spend, at(0), at(1)), false, 'the same list shows room for one pod only');
  assert.equal(room.claim('c', { ...spend, podUsdPerHour: 0.5 }, at(0), at(1)), false, 'nor a cheaper pod that does not fit beside the claim');
  assert.equal(room.claim('d', { ...spend, podUsdPerHour: 0.4 }, at(0), at(1)), true, 'one that fits beside it goes');
  // A list taken long enough after the claim shows the pod if it was created: its cost is then in the list's figure.
  const later = at(1 + claimVisibleAfterMs / 1000);
  assert.equal(room.claim('b', { ...spend, runningUsdPerHour: 1.38 }, later, later), false, 'the list counts the created pod: still no room');
  assert.equal(room.claim('b', spend, later, later), true, 'room again (the pod went): one more run may send');
});

void test('a refused or failed create gives its claim back at once; a run claims again over its own claim', () => {
  const room = new SpendRoom();
  assert.equal(room.claim('a', spend, at(0), at(1)), true);
  assert.equal(room.claim('a', spend, at(0), at(2)), true, 'its own claim is not in its way');
  room.release('a');
  assert.equal(room.claim('b', spend, at(0), at(3)), true);
});

void test('with room for two, two runs go', () => {
  const room = new SpendRoom();
  const wide = { ...spend, limitUsdPerHour: 2.1 };
  assert.deepEqual(['a', 'b', 'c'].map((uid) => room.claim(uid, wide, at(0), at(1))), [true, true, false]);
});

void test('a refusal contradicts the room the lists show: no run claims it again before a list taken a while after the refusal', () => {
  // Chaos seed 29 at N=30: a refused create gave its claim back and the next run claimed the same room
  // at once, so the resends came one after another (35 refused a minute) instead of all at once.
  const room = new SpendRoom();
  assert.equal(room.claim('a', spend, at(0), at(1)), true);
  room.refused('a', at(2));
  assert.equal(room.claim('b', spend, at(0), at(3)), false, 'the list the refusal contradicts');
  assert.equal(room.claim('b', spend, at(10), at(10)), false, 'a list that may still lag behind the refusal');
  const fresh = at(2 + claimVisibleAfterMs / 1000);
  assert.equal(room.claim('b', spend, fresh, fresh), true, 'a list taken long enough after it is believed again');
});
