// Deleting a run whose credentials are gone: the Secret deleted first (namespace deletion,
// `kubectl delete -f dir/`), or the key revoked. Cleanup must neither hang silently nor give up on
// a billing pod it can still delete. Every test ends with the leak check (world.stop()).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { revokeSimKey, simPods } from '../runpod-sim/client.ts';
import { kubectl } from '../support/kubectl.ts';
import { runManifest, testApiKey, withWorld } from '../support/operator.ts';

const running = (run: { status?: { phase?: string } }) => run.status?.phase === 'Running';

describe('deleting a run without its credentials', () => {
  test('the credentials Secret deleted first: the key the run last used still deletes its pod', () =>
    withWorld('nosecret', async (world) => {
      await world.apply(runManifest('nosecret'));
      await world.waitForRun('nosecret', 'Running', running, 90_000);
      await kubectl(['delete', 'secret', 'runpod', '-n', world.namespace]);
      await world.deleteRun('nosecret');
      const pods = await simPods(world.sim.adminUrl);
      assert.equal(pods.length, 1);
      assert.ok(pods[0]?.deletedAt, 'the pod is deleted before the finalizer goes');
      assert.equal(pods[0]?.deletedBy, 'account');
    }));

  test('the key revoked: status and an event say what is missing and how to let go; skip-cleanup lets go', () =>
    withWorld('revoked', async (world) => {
      await world.apply(runManifest('revoked'));
      await world.waitForRun('revoked', 'Running', running, 90_000);
      await revokeSimKey(world.sim.adminUrl, testApiKey);
      const deleting = kubectl(['delete', 'rpr', 'revoked', '-n', world.namespace, '--wait=false']);
      assert.equal((await deleting).status, 0);
      const blocked = await world.waitForRun('revoked', 'CleanupBlocked', (r) => r.status?.reason === 'CleanupBlocked', 60_000);
      assert.match(blocked.status?.message ?? '', /401|rejected/);
      assert.match(blocked.status?.message ?? '', /runpod-operator\.dev\/skip-cleanup/);
      assert.ok(!JSON.stringify(blocked.status).includes(testApiKey), 'the key is not in the status');
      const events = await kubectl(['get', 'events.events.k8s.io', '-n', world.namespace, '-o', 'json']);
      assert.match(events.stdout, /CleanupBlocked/);
      assert.match(events.stdout, /skip-cleanup/);
      assert.ok(!events.stdout.includes(testApiKey), 'the key is not in the events');
      const annotate = await kubectl(['annotate', 'rpr', 'revoked', '-n', world.namespace, 'runpod-operator.dev/skip-cleanup=true']);
      assert.equal(annotate.status, 0, annotate.stderr);
      const gone = await kubectl(['wait', '--for=delete', 'rpr/revoked', '-n', world.namespace, '--timeout=60s']);
      assert.equal(gone.status, 0, gone.stderr);
      // The pod bills on, as the user accepted: it deletes itself with its own key (what the watchdog does at the deadline).
      const [pod] = await simPods(world.sim.adminUrl);
      assert.ok(pod && pod.deletedAt === null, 'skip-cleanup leaves the pod to its watchdog');
      const response = await fetch(`${world.sim.baseUrl}/pods/${pod.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${pod.podApiKey}` } });
      assert.ok(response.ok, `pod self-delete: ${response.status}`);
    }));
});
