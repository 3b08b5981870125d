import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, released, sameRecord, validateTimings, type LeaderRecord } from '../../src/kube/leader-record.ts';

const T0 = '2026-11-29T10:00:00.000000Z';
const NOW = '2026-11-29T10:00:30.000000Z';
const rec = (holderIdentity: string, extra: Partial<LeaderRecord> = {}): LeaderRecord =>
  ({ holderIdentity, leaseDurationSeconds: 15, acquireTime: T0, renewTime: T0, leaseTransitions: 3, ...extra });
const base = { identity: 'me', leaseDurationSeconds: 15, wallNow: NOW };

void test('a free (released) lease is taken at once, counting a transition', () => {
  const d = decide({ ...base, current: rec('', { leaseDurationSeconds: 1 }), observedAt: 1000, now: 1000 });
  assert.deepEqual(d, { action: 'write', transition: true, record: { holderIdentity: 'me', leaseDurationSeconds: 15, acquireTime: NOW, renewTime: NOW, leaseTransitions: 4 } });
});

void test("someone else's lease is respected while it is live by OUR clock", () => {
  assert.deepEqual(decide({ ...base, current: rec('other'), observedAt: 1000, now: 1000 + 14_999 }), { action: 'wait', holder: 'other' });
});

void test("someone else's lease is taken once it has not changed for its whole duration", () => {
  const d = decide({ ...base, current: rec('other'), observedAt: 1000, now: 1000 + 15_000 });
  assert.equal(d.action, 'write');
  assert.ok(d.action === 'write' && d.transition && d.record.leaseTransitions === 4 && d.record.acquireTime === NOW);
});

void test('the duration that counts is the one in the record, not ours', () => {
  assert.equal(decide({ ...base, current: rec('other', { leaseDurationSeconds: 60 }), observedAt: 0, now: 30_000 }).action, 'wait');
  assert.equal(decide({ ...base, current: rec('other', { leaseDurationSeconds: 5 }), observedAt: 0, now: 5_000 }).action, 'write');
});

void test('renewTime is never compared with our wall clock (skew between nodes does not matter)', () => {
  // renewTime an hour "old" by our wall clock, but we only just saw it change: still live.
  const stale = rec('other', { renewTime: '2026-11-29T09:00:00.000000Z' });
  assert.equal(decide({ ...base, current: stale, observedAt: 50_000, now: 50_001 }).action, 'wait');
});

void test('our own lease is renewed: acquireTime and transitions are kept', () => {
  const d = decide({ ...base, current: rec('me'), observedAt: 0, now: 999_999 });
  assert.deepEqual(d, { action: 'write', transition: false, record: { holderIdentity: 'me', leaseDurationSeconds: 15, acquireTime: T0, renewTime: NOW, leaseTransitions: 3 } });
});

void test('release leaves an empty holder and a 1 s duration, keeping the transition count', () => {
  assert.deepEqual(released(rec('me'), NOW), { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: NOW, renewTime: NOW, leaseTransitions: 3 });
});

void test('sameRecord compares every field', () => {
  assert.equal(sameRecord(rec('a'), rec('a')), true);
  assert.equal(sameRecord(rec('a'), rec('a', { renewTime: NOW })), false);
  assert.equal(sameRecord(rec('a'), rec('a', { leaseTransitions: 9 })), false);
  assert.equal(sameRecord(undefined, undefined), true);
  assert.equal(sameRecord(rec('a'), undefined), false);
});

void test('timings are validated as client-go does', () => {
  validateTimings({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
  assert.throws(() => validateTimings({ leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }), /leaseDuration/);
  assert.throws(() => validateTimings({ leaseDurationMs: 15_000, renewDeadlineMs: 2_400, retryPeriodMs: 2_000 }), /renewDeadline/);
  assert.throws(() => validateTimings({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 0 }), /retryPeriod/);
  assert.throws(() => validateTimings({ leaseDurationMs: 900, renewDeadlineMs: 500, retryPeriodMs: 100 }), /1 s/);
});
