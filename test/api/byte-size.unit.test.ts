// results.maxBytes sizes: Kubernetes binary suffixes, read as bytes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_RESULTS_MAX_BYTES, byteSizeValue } from '../../src/api/spec.ts';

test('sizes in bytes with binary suffixes', () => {
  for (const [size, bytes] of [['0', 0], ['4096', 4096], ['4Ki', 4096], ['500Mi', 500 * 2 ** 20], ['100Gi', 100 * 2 ** 30], ['2Ti', 2 * 2 ** 40], ['1Pi', 2 ** 50]] as const) {
    assert.equal(byteSizeValue(size), bytes, size);
  }
  assert.equal(byteSizeValue(DEFAULT_RESULTS_MAX_BYTES), 100 * 2 ** 30);
  for (const bad of ['', '1.5Gi', '100GB', '100gi', '-1', 'Gi']) assert.throws(() => byteSizeValue(bad), bad);
});
