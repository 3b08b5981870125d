// A pod's staging directory is the same for every try (so a cut-short retrieval resumes); staging no
// retrieval will resume is removed at a leader's start and when its run settles; verified results stay.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commitResults, discardStagingOf, removeAbandonedStaging, resultLocation, stagingDirectory } from '../../src/results/store.ts';

/** A fresh results directory for `body`, removed after it. */
async function withResultsDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'store-'));
  try {
    await body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void test('a pod\'s staging directory is the same on every try, and another pod\'s differs', () => withResultsDir(async (dir) => {
  const location = resultLocation(dir, 'ml', 'train', 'uid-1');
  const first = await stagingDirectory(location, 'pod-a');
  writeFileSync(join(first, 'kept'), 'half');
  assert.equal(await stagingDirectory(location, 'pod-a'), first);
  assert.equal(existsSync(join(first, 'kept')), true, 'a second try finds what the first left');
  assert.notEqual(await stagingDirectory(location, 'pod-b'), first);
  assert.match(first, /uid-1\.partial-[0-9a-f]{8}$/);
}));

void test('a commit, or discardStagingOf, removes every staging directory of the run and nothing else', () => withResultsDir(async (dir) => {
  const location = resultLocation(dir, 'ml', 'train', 'uid-1');
  const staging = await stagingDirectory(location, 'pod-b');
  mkdirSync(join(staging, 'results'));
  writeFileSync(join(staging, 'results', 'model.bin'), 'weights');
  await stagingDirectory(location, 'pod-a');
  const otherRun = await stagingDirectory(resultLocation(dir, 'ml', 'train', 'uid-2'), 'pod-c');
  await commitResults(staging, location);
  assert.deepEqual(readdirSync(join(dir, 'ml', 'train')).sort(), ['uid-1', otherRun.split('/').at(-1)].sort());
  assert.equal(existsSync(join(location, 'results', 'model.bin')), true);

  await discardStagingOf(resultLocation(dir, 'ml', 'train', 'uid-2'));
  assert.deepEqual(readdirSync(join(dir, 'ml', 'train')), ['uid-1']);
  await discardStagingOf(resultLocation(dir, 'ml', 'gone', 'uid-3'));
}));

void test('removeAbandonedStaging removes every <uid>.partial-<hex> directory except those of runs that may resume', () => withResultsDir(async (dir) => {
  const verified = resultLocation(dir, 'ml', 'train', 'uid-1');
  mkdirSync(join(verified, 'results'), { recursive: true });
  writeFileSync(join(verified, 'results', 'model.bin'), 'weights');
  const abandoned = await stagingDirectory(resultLocation(dir, 'ml', 'train', 'uid-2'), 'pod-2');
  mkdirSync(join(abandoned, 'results'), { recursive: true });
  writeFileSync(join(abandoned, 'results', '.model.bin.part'), 'half');
  const other = await stagingDirectory(resultLocation(dir, 'team-b', 'eval', 'uid-3'), 'pod-3');
  const resuming = await stagingDirectory(resultLocation(dir, 'ml', 'long', 'uid-4'), 'pod-4');
  // A user's directory that merely contains the word is not ours to remove.
  const lookalike = join(dir, 'ml', 'train', 'notes.partial-draft');
  mkdirSync(lookalike, { recursive: true });

  const removed = await removeAbandonedStaging(dir, (uid) => uid === 'uid-4');
  assert.deepEqual(removed.sort(), [abandoned, other].sort());
  assert.equal(existsSync(abandoned), false);
  assert.equal(existsSync(other), false);
  assert.equal(existsSync(resuming), true, 'a run that may still retrieve keeps its staging');
  assert.equal(existsSync(join(verified, 'results', 'model.bin')), true);
  assert.equal(existsSync(lookalike), true);
  assert.deepEqual(await removeAbandonedStaging(dir), [resuming], 'without a run that may resume, every staging goes');
  assert.deepEqual(await removeAbandonedStaging(join(dir, 'missing')), [], 'a results directory that does not exist yet is fine');
}));
