import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exponentialDelay, jittered } from '../../src/kube/backoff.ts';

test('exponentialDelay doubles from the base and stops at the cap', () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6].map((step) => exponentialDelay(1000, 30_000, step)), [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
  assert.deepEqual([0, 1, 4, 5].map((step) => exponentialDelay(2000, 60_000, step)), [2000, 4000, 32_000, 60_000]);
});

test('exponentialDelay stays at the cap however many failures (no Infinity, no NaN)', () => {
  assert.equal(exponentialDelay(800, 30_000, 10_000), 30_000);
  assert.equal(exponentialDelay(5, 300_000, 1e9), 300_000);
});

test('jittered adds up to `jitter` times the delay, by the random draw', () => {
  assert.equal(jittered(1000, 1, () => 0), 1000);
  assert.equal(jittered(1000, 1, () => 0.5), 1500);
  assert.equal(jittered(2000, 1.2, () => 0.25), 2600);
  for (let i = 0; i < 100; i++) {
    const delay = jittered(1000, 1);
    assert.ok(delay >= 1000 && delay < 2000, String(delay));
  }
});
