// Two accounts on one controller: one account's long Retry-After (a 429 storm) must not hold the
// reconcile workers that another account's runs need. Ends with the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rateLimiterForKey } from '../../src/runpod/rate-limiter.ts';
import { API_KEY_SCOPES } from '../runpod-sim/config.ts';
import { hasCondition, runManifest, startWorld, testApiKey, unsuppressed } from '../support/operator.ts';

const otherKey = 'rpa_OTHER_ACCOUNT_DO_NOT_LOG_5c2e';

test('an account waiting out a long Retry-After never holds the workers another account\'s runs need', () => unsuppressed(async () => {
  await using world = await startWorld('isolation', { sim: { keys: [{ key: otherKey, scopes: [...API_KEY_SCOPES] }] } });
  await world.apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'runpod-other' }, stringData: { apiKey: otherKey } });
  await world.startController({ maxConcurrentReconciles: '2' });
  await world.apply(runManifest('a-0'));
  await world.waitForRun('a-0', 'Running', (r) => r.status?.phase === 'Running', 90_000);
  // What a 429 with Retry-After: 20 leaves behind: nobody of account A sends anything for 20 s.
  rateLimiterForKey(testApiKey).backOff(20_000);
  for (const name of ['a-1', 'a-2', 'a-3']) await world.apply(runManifest(name));
  await world.apply(runManifest('b-1', { credentials: { secretName: 'runpod-other' } }));
  // Within the pause: B's run is provisioned and reaches its pod while A's runs wait, workers free.
  const b = await world.waitForRun('b-1', 'PodReady while account A waits', (r) => hasCondition(r, 'PodReady'), 15_000);
  assert.equal(b.status?.attempts?.length, 1);
  for (const name of ['a-1', 'a-2', 'a-3']) {
    const waiting = await world.run(name);
    assert.notEqual(waiting?.status?.phase, 'Failed', `${name} waits, it does not fail: ${JSON.stringify(waiting?.status)}`);
  }
  for (const name of ['b-1', 'a-1', 'a-2', 'a-3', 'a-0']) await world.deleteRun(name);
}));
