import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PerKeyExponentialBackoff, RetryBackoff, TokenBucket } from '../../src/kube/rate-limit.ts';
import { FakeClock } from './fake-clock.ts';

void test('per-key backoff doubles from base to cap and forgets', () => {
  const b = new PerKeyExponentialBackoff({ baseDelayMs: 5, maxDelayMs: 100 });
  assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map(() => b.when('a')), [5, 10, 20, 40, 80, 100, 100]);
  assert.equal(b.numRequeues('a'), 7);
  assert.equal(b.when('b'), 5);
  b.forget('a');
  assert.equal(b.numRequeues('a'), 0);
  assert.equal(b.when('a'), 5);
});

void test('per-key backoff stays finite after very many failures', () => {
  const b = new PerKeyExponentialBackoff({ baseDelayMs: 1000, maxDelayMs: 300_000 });
  let last = 0;
  for (let i = 0; i < 2000; i++) last = b.when('a');
  assert.equal(last, 300_000);
});

void test('per-key backoff rejects nonsense options', () => {
  assert.throws(() => new PerKeyExponentialBackoff({ baseDelayMs: 0, maxDelayMs: 10 }), RangeError);
  assert.throws(() => new PerKeyExponentialBackoff({ baseDelayMs: 10, maxDelayMs: 5 }), RangeError);
});

void test('token bucket: full burst, then debt paid back at the rate', () => {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ ratePerSecond: 10, burst: 3, clock });
  assert.deepEqual([bucket.reserve(), bucket.reserve(), bucket.reserve()], [0, 0, 0]);
  assert.equal(Math.round(bucket.reserve()), 100);
  assert.equal(Math.round(bucket.reserve()), 200);
  clock.advance(200);
  assert.equal(Math.round(bucket.reserve()), 100, 'two tokens came back, both already spoken for, so 100 ms for the next');
  clock.advance(10_000);
  assert.deepEqual([bucket.reserve(), bucket.reserve(), bucket.reserve()], [0, 0, 0], 'refills to burst, no more');
  assert.ok(bucket.reserve() > 0);
});

void test('token bucket tryTake never goes into debt', () => {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ ratePerSecond: 1, burst: 2, clock });
  assert.equal(bucket.tryTake(), true);
  assert.equal(bucket.tryTake(), true);
  assert.equal(bucket.tryTake(), false);
  clock.advance(999);
  assert.equal(bucket.tryTake(), false);
  clock.advance(1);
  assert.equal(bucket.tryTake(), true);
  assert.equal(bucket.tryTake(), false);
});

void test('retry backoff: exponential with jitter up to the cap', () => {
  const clock = new FakeClock();
  let r = 0;
  const b = new RetryBackoff({ initialMs: 1000, maxMs: 8000, jitter: 1, clock, random: () => r });
  assert.deepEqual([b.next(), b.next(), b.next(), b.next(), b.next()], [1000, 2000, 4000, 8000, 8000]);
  b.reset();
  r = 0.5;
  assert.equal(b.next(), 1500, 'jitter adds up to jitter x the nominal delay');
  r = 0.999;
  assert.ok(b.next() < 4000);
});

void test('retry backoff starts over after a healthy period without failures', () => {
  const clock = new FakeClock();
  const b = new RetryBackoff({ initialMs: 100, maxMs: 10_000, jitter: 0, resetAfterMs: 60_000, clock });
  assert.deepEqual([b.next(), b.next(), b.next()], [100, 200, 400]);
  clock.advance(59_999);
  assert.equal(b.next(), 800, 'failures closer together than resetAfterMs keep growing');
  clock.advance(60_000);
  assert.equal(b.next(), 100);
});
