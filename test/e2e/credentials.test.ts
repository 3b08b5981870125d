// A credentials Secret that holds no usable key (a stray byte) is that run's own problem: its status
// says which Secret and what is wrong (never the value), and nothing else stops — not the sweep of
// other accounts, not a run whose key only has a trailing newline, not a deletion. Ends with the leak check.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createLogger } from '../../src/log.ts';
import { POD_ENV } from '../../src/pod/protocol.ts';
import { installScope } from '../../src/run/ownership.ts';
import { createRunpodClient } from '../../src/runpod/index.ts';
import { simPods } from '../runpod-sim/client.ts';
import { kubectl } from '../support/kubectl.ts';
import { hasCondition, runManifest, startWorld, testApiKey, unsuppressed, type World } from '../support/operator.ts';
import { eventually, EVENTUALLY_MS } from '../support/eventually.ts';

/** A recognisable fake key with a control byte inside: what must never be shown, in whole or in part. */
const badKey = 'rpa_BAD\x01KEY_DO_NOT_LOG_E2E_7f3a91c2';
const badParts = ['KEY_DO_NOT_LOG_E2E', 'rpa_BAD'];

async function writeSecret(world: World, name: string, value: string): Promise<void> {
  const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name }, data: { apiKey: Buffer.from(value, 'latin1').toString('base64') } };
  await world.apply(secret);
}

function assertNotShown(text: string, where: string): void {
  for (const part of badParts) assert.ok(!text.includes(part), `a part of the bad key is in the ${where}`);
}

describe('a credentials Secret with a malformed key', () => {
  test('the run waits Pending/CredentialsInvalid naming the Secret; a trailing newline is trimmed; every other account is swept; deleting lets go', () => unsuppressed(async () => {
    await using world = await startWorld('badkey');
    await writeSecret(world, 'runpod-bad', `${badKey}\n`);
    await writeSecret(world, 'runpod-newline', `${testApiKey}\n`);
    // A pod of ours past its deadline: the sweep at the leader's start must delete it whatever else it meets.
    const client = createRunpodClient({ apiKey: testApiKey, baseUrl: world.sim.baseUrl, logger: createLogger('silent') });
    const overdue = await client.createPod({
      name: 'overdue-1', image: 'img', gpu: { id: 'NVIDIA A40', count: 1 }, args: 'sleep 600',
      env: { [POD_ENV.cluster]: world.clusterId, [POD_ENV.scope]: installScope(world.namespace), [POD_ENV.run]: 'uid-gone', [POD_ENV.deadline]: String(Math.floor(Date.now() / 1000) - 120) },
    });
    await client.close();
    await world.apply(runManifest('bad', { credentials: { secretName: 'runpod-bad' } }));
    await world.apply(runManifest('trimmed', { credentials: { secretName: 'runpod-newline' } }));
    await world.startController({ sweepInterval: '2s' });

    const bad = await world.waitForRun('bad', 'CredentialsInvalid', (r) => r.status?.reason === 'CredentialsInvalid');
    assert.equal(bad.status?.phase, 'Pending');
    assert.match(bad.status?.message ?? '', new RegExp(`Secret ${world.namespace}/runpod-bad key "apiKey" does not hold a usable Runpod API key: it contains a control character \\(0x01\\) at byte 8`));
    await world.waitForRun('trimmed', 'PodReady', (r) => hasCondition(r, 'PodReady'), 90_000);
    await eventually('the overdue pod of the account that can be used to be swept',
      async () => (await simPods(world.sim.adminUrl)).find((pod) => pod.id === overdue.id)?.deletedAt, EVENTUALLY_MS, 500);
    const said = world.logLines.filter((line) => line.includes('holds no usable Runpod API key'));
    assert.equal(said.length, 1, `the unusable Secret is logged once, not at every pass:\n${said.join('')}`);

    assertNotShown(JSON.stringify((await world.run('bad'))?.status), 'status');
    assertNotShown((await kubectl(['get', 'events.events.k8s.io', '-n', world.namespace, '-o', 'json'])).stdout, 'events');
    assertNotShown(world.logLines.join(''), 'controller log');
    await world.deleteRun('bad');
    await world.deleteRun('trimmed');
  }));

  test('a key that turned malformed after the run rented its pod: the run keeps its phase and says why; skip-cleanup lets go', () => unsuppressed(async () => {
    await using world = await startWorld('rotated');
    await world.startController();
    await world.apply(runManifest('rotated'));
    await world.waitForRun('rotated', 'Running', (r) => r.status?.phase === 'Running', 90_000);
    await writeSecret(world, 'runpod', badKey);
    // A new leader holds no earlier key of the run.
    await world.stopController();
    await world.startController();
    const invalid = await world.waitForRun('rotated', 'CredentialsInvalid', (r) => r.status?.reason === 'CredentialsInvalid');
    assert.equal(invalid.status?.phase, 'Running', 'the run keeps its phase (and its guards)');
    assert.match(invalid.status?.message ?? '', /keeps its pod and its limits/);
    assert.equal((await kubectl(['delete', 'rpr', 'rotated', '-n', world.namespace, '--wait=false'])).status, 0);
    await world.waitForRun('rotated', 'CleanupBlocked', (r) => r.status?.reason === 'CleanupBlocked');
    const annotate = await kubectl(['annotate', 'rpr', 'rotated', '-n', world.namespace, 'runpod-operator.dev/skip-cleanup=true']);
    assert.equal(annotate.status, 0, annotate.stderr);
    const gone = await kubectl(['wait', '--for=delete', 'rpr/rotated', '-n', world.namespace, '--timeout=60s']);
    assert.equal(gone.status, 0, gone.stderr);
    assertNotShown(world.logLines.join(''), 'controller log');
    // The user let go: the pod is left to its watchdog, which deletes it with its own key.
    const [pod] = await simPods(world.sim.adminUrl);
    assert.ok(pod && pod.deletedAt === null, 'skip-cleanup leaves the pod to its watchdog');
    const response = await fetch(`${world.sim.baseUrl}/pods/${pod.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${pod.podApiKey}` } });
    assert.ok(response.ok, `pod self-delete: ${response.status}`);
  }));
});
