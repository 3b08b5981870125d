// Partial results an interrupted retrieval left behind are removed at start; verified ones stay.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeAbandonedStaging, resultLocation, stagingDirectory } from '../../src/results/store.ts';

void test('removeAbandonedStaging removes every <uid>.partial-<hex> directory and nothing else', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'store-'));
  try {
    const verified = resultLocation(dir, 'ml', 'train', 'uid-1');
    mkdirSync(join(verified, 'results'), { recursive: true });
    writeFileSync(join(verified, 'results', 'model.bin'), 'weights');
    const abandoned = await stagingDirectory(resultLocation(dir, 'ml', 'train', 'uid-2'));
    mkdirSync(join(abandoned, 'results'), { recursive: true });
    writeFileSync(join(abandoned, 'results', `.model.bin.part-${'a'.repeat(12)}`), 'half');
    const other = await stagingDirectory(resultLocation(dir, 'team-b', 'eval', 'uid-3'));
    // A user's directory that merely contains the word is not ours to remove.
    const lookalike = join(dir, 'ml', 'train', 'notes.partial-draft');
    mkdirSync(lookalike, { recursive: true });

    const removed = await removeAbandonedStaging(dir);
    assert.deepEqual(removed.sort(), [abandoned, other].sort());
    assert.equal(existsSync(abandoned), false);
    assert.equal(existsSync(other), false);
    assert.equal(existsSync(join(verified, 'results', 'model.bin')), true);
    assert.equal(existsSync(lookalike), true);
    assert.deepEqual(await removeAbandonedStaging(join(dir, 'missing')), [], 'a results directory that does not exist yet is fine');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
