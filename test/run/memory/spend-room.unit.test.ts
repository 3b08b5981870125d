// Runs waiting for room under the account spend limit: of those that see room in the same pod list,
// only as many send their create as that room takes; the others wait without a call (chaos seed 29 at
// N=100: 1026 refused creates for 40 created, up to 92 a minute, each refusal followed by two more calls).
// Runs whose figures are unknown go one at a time (seed 29 at N=100 on 6ea4b76: up to 59 refused
// creates within 10 s of each restart, when every waiting run resent blind).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SpendRoom } from '../../../src/run/memory/spend-room.ts';
import { claimVisibleAfterMs, figuresFreshForMs, limitedForMs } from '../../../src/run/decide/timings.ts';

const t0 = Date.parse('2026-12-01T12:00:00Z');
const at = (seconds: number): Date => new Date(t0 + seconds * 1000);
const spend = { limitUsdPerHour: 1.8, runningUsdPerHour: 0.69, podUsdPerHour: 0.69 };

void test('room for one pod goes to one run; the others are held back until a list shows where it went', () => {
  const room = new SpendRoom();
  assert.equal(room.claim('a', spend, at(0), at(1)), 'granted');
  assert.equal(room.claim('b', spend, at(0), at(1)), 'claimed', 'the same list shows room for one pod only');
  assert.equal(room.claim('c', { ...spend, podUsdPerHour: 0.5 }, at(0), at(1)), 'claimed', 'nor a cheaper pod that does not fit beside the claim');
  assert.equal(room.claim('d', { ...spend, podUsdPerHour: 0.4 }, at(0), at(1)), 'granted', 'one that fits beside it goes');
  // A list taken long enough after the claim shows the pod if it was created: its cost is then in the list's figure.
  const later = at(1 + claimVisibleAfterMs / 1000);
  assert.equal(room.claim('b', { ...spend, runningUsdPerHour: 1.38 }, later, later), 'no-room', 'the list counts the created pod: still no room');
  assert.equal(room.claim('b', spend, later, later), 'granted', 'room again (the pod went): one more run may send');
});

void test('a refused or failed create gives its claim back at once; a run claims again over its own claim', () => {
  const room = new SpendRoom();
  assert.equal(room.claim('a', spend, at(0), at(1)), 'granted');
  assert.equal(room.claim('a', spend, at(0), at(2)), 'granted', 'its own claim is not in its way');
  room.release('a');
  assert.equal(room.claim('b', spend, at(0), at(3)), 'granted');
});

void test('with room for two, two runs go', () => {
  const room = new SpendRoom();
  const wide = { ...spend, limitUsdPerHour: 2.1 };
  assert.deepEqual(['a', 'b', 'c'].map((uid) => room.claim(uid, wide, at(0), at(1))), ['granted', 'granted', 'claimed']);
});

void test('a refusal contradicts the room the lists show: no run claims it again before a list taken a while after the refusal', () => {
  // Chaos seed 29 at N=30: a refused create gave its claim back and the next run claimed the same room
  // at once, so the resends came one after another (35 refused a minute) instead of all at once.
  const room = new SpendRoom();
  assert.equal(room.claim('a', spend, at(0), at(1)), 'granted');
  assert.equal(room.limited(at(2)), false);
  room.refused('a', at(2), 'SECURE/1xA', {});
  assert.equal(room.limited(at(3)), true, 'the account is known to be at its limit');
  assert.equal(room.limited(new Date(at(2).getTime() + limitedForMs)), false, 'until no create has been refused for a while');
  assert.equal(room.claim('b', spend, at(0), at(3)), 'refused-lately', 'the list the refusal contradicts');
  assert.equal(room.claim('b', spend, at(10), at(10)), 'refused-lately', 'a list that may still lag behind the refusal');
  const fresh = at(2 + claimVisibleAfterMs / 1000);
  assert.equal(room.claim('b', spend, fresh, fresh), 'granted', 'a list taken long enough after it is believed again');
});

void test('runs whose figures are unknown claim blind, one at a time, and nothing goes beside a blind claim', () => {
  const room = new SpendRoom();
  const blind = { runningUsdPerHour: 0.69 };
  assert.equal(room.claim('a', blind, at(0), at(1)), 'granted', 'the first goes, as a probe');
  assert.equal(room.claim('b', blind, at(0), at(1)), 'claimed', 'the next waits for what the probe finds');
  assert.equal(room.claim('c', spend, at(0), at(1)), 'claimed', 'a run with figures does not go beside a pod of unknown price');
  assert.equal(room.claim('b', blind, undefined, at(2)), 'claimed', 'nor does one without a list');
  const later = at(1 + claimVisibleAfterMs / 1000);
  assert.equal(room.claim('b', blind, later, later), 'granted', 'a list taken long enough after the probe shows its pod: the next probe goes');
  room.release('b');
  assert.equal(room.claim('c', spend, later, later), 'granted');
});

void test("a refusal's figures are the account's: its limit for every run, the pod's price for pods of its key", () => {
  const room = new SpendRoom();
  assert.deepEqual(room.known('SECURE/1xA', at(0)), {});
  room.refused('a', at(0), 'SECURE/1xA', { limitUsdPerHour: 1.8, podUsdPerHour: 0.69 });
  room.refused('b', at(1), 'SECURE/1xB', {});
  assert.deepEqual(room.known('SECURE/1xA', at(2)), { limitUsdPerHour: 1.8, podUsdPerHour: 0.69 });
  assert.deepEqual(room.known('SECURE/1xB', at(2)), { limitUsdPerHour: 1.8 }, 'a figure left unknown by a later refusal stays as learned');
  assert.deepEqual(room.known('SECURE/1xA', new Date(t0 + figuresFreshForMs)), {}, 'read again after a while: the limit may have been raised');
});
