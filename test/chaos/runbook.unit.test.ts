// The suite's own bookkeeping: a run is gone only when a list begun after its apply misses it. Chaos
// seeds 35 and 43 at N=100 on 5d251c5 reported success runs "deleted" that nobody deleted: a list begun
// before their apply returned was taken after it, and `gone` stuck. Such runs escaped "runs not
// terminal", which skips deleted runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RunpodRun } from '../../src/api/runpodrun.ts';
import { takeListing, type RunEntry } from './runbook.ts';
import { planRun } from './workload.ts';
import { Random } from './random.ts';

const entry = (name: string, appliedAt: number): RunEntry => ({
  planned: { ...planRun(new Random(1), 0, 'success', 0), name }, uid: `uid-${name}`, appliedAt, gone: false, deleteRequested: false,
});
const listed = (name: string): RunpodRun => ({ apiVersion: 'v1', kind: 'RunpodRun', metadata: { name, namespace: 'ns', uid: `uid-${name}` }, spec: {} });

test('a run missing from a list is gone only if that list began after its apply returned', () => {
  const before = entry('applied-before', 1000);
  const after = entry('applied-after', 2500);
  const shown = entry('shown', 1000);
  takeListing([before, after, shown], [listed('shown')], 2000);
  assert.equal(before.gone, true, 'applied before the list began, and not in it: deleted');
  assert.equal(after.gone, false, 'the list may predate its apply: not judged');
  assert.equal(shown.latest?.metadata.name, 'shown');
  takeListing([after], [], 3000);
  assert.equal(after.gone, true, 'a list begun after its apply misses it: deleted');
});
