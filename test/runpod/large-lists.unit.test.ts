// The account's pod list as it is once hundreds of the controller's pods are up: every pod is listed
// with its create call's env, and ours carries the pod-side scripts (about 35 KB, 39 KB a listed pod
// in all). The scale bench's 300 held runs stalled at 215: the list answer passed the client's 8 MiB
// cap, so every list failed and the pods created after it were never seen listed.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createLogger } from '../../src/log.ts';
import { renderPodScriptsEnv } from '../../src/pod/render.ts';
import { createRunpodClient } from '../../src/runpod/client.ts';
import { type FixtureServer, startFixtureServer } from './fixture-server.ts';

const PODS = 600;
const env = { RUNPOD_OPERATOR_CLUSTER: 'c', ...renderPodScriptsEnv() };
const pods = Array.from({ length: PODS }, (_, i) => ({ id: `pod-${i}`, name: `run-${i}-1`, desiredStatus: 'RUNNING', env: { ...env, RUNPOD_OPERATOR_RUN: `uid-${i}` } }));

let server: FixtureServer;
before(async () => {
  server = await startFixtureServer(() => ({ status: 200, body: { pods, pagination: { hasNextPage: false, nextCursor: null } } }));
});
after(() => server.stop());

test(`a list of ${PODS} of the controller's pods, each with its scripts in its env, is read whole`, async () => {
  const listBytes = Buffer.byteLength(JSON.stringify(pods));
  assert.ok(listBytes > 16 * 1024 * 1024, `the answer is larger than the old cap twice over (${listBytes} bytes)`);
  const client = createRunpodClient({ apiKey: 'rpa_LARGE_LIST_TEST_KEY_01234', baseUrl: server.baseUrl, logger: createLogger('silent'), retry: { readAttempts: 1 } });
  const listed = await client.listPods();
  assert.equal(listed.length, PODS);
});
