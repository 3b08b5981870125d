import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { BASELINE_FILE, longestFirst, readDurations, recordDurations } from './file-order.ts';

test('longestFirst: files without a record first (by name), then the longest, ties by name', () => {
  const files = ['test/e2e/a.test.ts', 'test/e2e/b.test.ts', 'test/pod/c.test.ts', 'test/pod/d.test.ts', 'test/z.test.ts'];
  const durations = { 'test/e2e/a.test.ts': 10, 'test/e2e/b.test.ts': 50, 'test/pod/c.test.ts': 119, 'test/pod/d.test.ts': 50, 'test/gone.test.ts': 500 };
  assert.deepEqual(longestFirst(files, durations), ['test/z.test.ts', 'test/pod/c.test.ts', 'test/e2e/b.test.ts', 'test/pod/d.test.ts', 'test/e2e/a.test.ts']);
  assert.deepEqual(longestFirst(files, {}), files, 'no record: name order');
});

test('recordDurations keeps what this run did not measure; an unreadable record reads as none', () => {
  const dir = mkdtempSync(join(tmpdir(), 'file-order-'));
  try {
    const path = join(dir, 'nested', 'durations.json');
    assert.deepEqual(readDurations(path), {});
    recordDurations({ a: 1, b: 2 }, path);
    recordDurations({ b: 3 }, path);
    assert.deepEqual(readDurations(path), { a: 1, b: 3 });
    writeFileSync(path, '{"a": "slow"}');
    assert.deepEqual(readDurations(path), {});
    writeFileSync(path, 'not json');
    assert.deepEqual(readDurations(path), {});
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the repository keeps a readable baseline, so a fresh checkout also starts the longest files first', () => {
  const baseline = readDurations(BASELINE_FILE);
  assert.ok(Object.keys(baseline).length > 40, `${BASELINE_FILE} holds ${Object.keys(baseline).length} files`);
  assert.ok(Object.keys(baseline).every((file) => file.startsWith('test/') && file.endsWith('.test.ts')));
});
