// How long the pod may take to hash its results (the manifest) and to list them again after the
// transfer: the run's retrieve grace, past which its pod is deleted anyway, not a fixed 10 minutes
// (100 GiB of checkpoints hash for longer on a slow disk; a 30 s grace should not wait 10 minutes).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listingTimeoutMs } from '../../../src/run/ports/job-steps.ts';
import { spec } from '../fixture.ts';

const cases = [
  { retrieveGraceSeconds: 30, ms: 30_000 },
  { retrieveGraceSeconds: undefined, ms: 3_600_000 }, // the default grace, an hour
  { retrieveGraceSeconds: 604_800, ms: 604_800_000 },
];

for (const c of cases) {
  test(`the manifest and the re-listing may take the retrieve grace: ${c.retrieveGraceSeconds ?? 'default'} s → ${c.ms} ms`, () => {
    const limits = c.retrieveGraceSeconds === undefined ? {} : { retrieveGraceSeconds: c.retrieveGraceSeconds };
    assert.equal(listingTimeoutMs(spec({}, limits).spec), c.ms);
  });
}
