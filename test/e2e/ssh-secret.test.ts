// The run's owned Secret `<run>-ssh` against a user's own Secret of that name: the controller never
// overwrites or adopts it; the run waits, saying which Secret is in the way, and rents nothing.
// Real API server, real kubectl, the simulator; ends with the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { simPods } from '../runpod-sim/client.ts';
import { kubectl } from '../support/kubectl.ts';
import { hasCondition, runManifest, withWorld } from '../support/operator.ts';

interface SecretJson { data?: Record<string, string>; metadata: { ownerReferences?: unknown[] } }

test('a user\'s own Secret named <run>-ssh is refused, never overwritten; once it is gone the run proceeds', () =>
  withWorld('sshclash', async (world) => {
    await kubectl(['create', 'secret', 'generic', 'clash-ssh', '-n', world.namespace, '--from-literal=mine=precious']);
    await world.apply(runManifest('clash'));
    const run = await world.waitForRun('clash', 'SshSecretConflict', (r) => r.status?.reason === 'SshSecretConflict');
    assert.equal(run.status?.phase, 'Pending');
    assert.match(run.status?.message ?? '', new RegExp(`Secret ${world.namespace}/clash-ssh .*not owned by this run`));
    await sleep(3000);
    const secret = JSON.parse((await kubectl(['get', 'secret', 'clash-ssh', '-n', world.namespace, '-o', 'json'])).stdout) as SecretJson;
    assert.deepEqual(secret.data, { mine: Buffer.from('precious').toString('base64') }, 'the user\'s Secret is untouched');
    assert.equal(secret.metadata.ownerReferences, undefined, 'and not tied to the run');
    assert.equal((await simPods(world.sim.adminUrl)).length, 0, 'nothing rented while it waits');

    await kubectl(['delete', 'secret', 'clash-ssh', '-n', world.namespace]);
    await world.waitForRun('clash', 'PodReady', (r) => hasCondition(r, 'PodReady'), 90_000);
    await world.deleteRun('clash');
  }));
