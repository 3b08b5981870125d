// Registry credentials (openapi-v2.json /v2/registries; API-NOTES 2026-12 addendum part 2) and private
// images (config images.<image>.registryAuth): username and password are write-only; a pod without
// the right credential is created and bills but never gets its image, which only its system log says;
// with it the pod runs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertNoLeaks, podLogUntil, simPodLogs, simPods, simPodsWithProcesses } from './client.ts';
import { createSimRegistry } from './resources-client.ts';
import { startSimulator, type RunningSimulator } from './server.ts';
import { call, field, keyPair, sshConnect, sshdPodBody, sshExec, waitForSsh, type ApiResponse } from './testkit.ts';

const KEY = 'sim-test-account-key-registries';
const OTHER = 'sim-test-account-key-registries-other';
const USERNAME = 'acme-pull-bot';
const PASSWORD = 'pw-8f3a1c9e-never-echoed';
const PRIVATE = 'ghcr.io/acme/private-job:1.0';
const GPU = 'NVIDIA GeForce RTX 4090';

const podBody = (name: string, registry?: string): Record<string, unknown> => ({
  name, image: PRIVATE, gpu: { id: GPU }, ports: ['22/tcp'], ...(registry === undefined ? {} : { registry }),
});

describe('registry credentials and private images', () => {
  let sim: RunningSimulator;
  /** Every answer of the test, as text: none may carry the username or the password. */
  const answers: string[] = [];
  const v2 = async (method: string, path: string, key: string, body?: unknown): Promise<ApiResponse> => {
    const response = await call(sim, method, path, { key, body });
    answers.push(JSON.stringify(response.body));
    return response;
  };

  before(async () => {
    sim = await startSimulator({
      apiKeys: [KEY, OTHER],
      config: {
        rateLimits: { enabled: false },
        timings: { pullBackoffMs: 100 },
        images: { [PRIVATE]: { registryAuth: { username: USERNAME, password: PASSWORD } } },
      },
    });
  });

  after(async () => {
    await sim.stop();
  });

  test('create, list, read, delete: the answers are {id, name}, never the username or password', async () => {
    const created = await v2('POST', '/v2/registries', KEY, { name: 'ghcr-acme', username: USERNAME, password: PASSWORD });
    assert.equal(created.status, 201);
    const id = String(field(created.body, 'id'));
    assert.deepEqual(created.body, { id, name: 'ghcr-acme' });
    assert.deepEqual((await v2('GET', '/v2/registries', KEY)).body, { registries: [{ id, name: 'ghcr-acme' }] });
    assert.deepEqual((await v2('GET', `/v2/registries/${id}`, KEY)).body, { id, name: 'ghcr-acme' });
    assert.deepEqual((await v2('GET', '/v2/registries', OTHER)).body, { registries: [] });
    assert.equal((await v2('GET', `/v2/registries/${id}`, OTHER)).status, 404);
    assert.equal((await v2('DELETE', `/v2/registries/${id}`, OTHER)).status, 404);

    // Off the contract: 422 naming the field, not its value.
    const extra = await v2('POST', '/v2/registries', KEY, { name: 'x', username: USERNAME, password: PASSWORD, url: 'ghcr.io' });
    assert.deepEqual([extra.status, field(extra.body, 'errors')], [422, ["$: additional properties 'url' not allowed"]]);
    const missing = await v2('POST', '/v2/registries', KEY, { name: 'x', username: USERNAME });
    assert.deepEqual([missing.status, field(missing.body, 'errors')], [422, ["$: missing property 'password'"]]);
    const empty = await v2('POST', '/v2/registries', KEY, { name: 'x', username: USERNAME, password: '' });
    assert.deepEqual([empty.status, field(empty.body, 'errors')], [422, ['$.password: minLength: want 1']]);
    assert.equal((await v2('PATCH', `/v2/registries/${id}`, KEY, { name: 'y' })).status, 405);

    assert.equal((await v2('DELETE', `/v2/registries/${id}`, KEY)).status, 204);
    assert.equal((await v2('GET', `/v2/registries/${id}`, KEY)).status, 404);
    assert.equal((await v2('DELETE', `/v2/registries/${id}`, KEY)).status, 404);
    // A create that names a credential this account does not have: 404, like any id it cannot see.
    assert.deepEqual((await v2('POST', '/v2/pods', KEY, podBody('no-such-registry', id))).body, { title: 'Not Found', status: 404, detail: 'resource not found' });
  });

  test('a private image without its credential: created and billing, never pulled, no SSH port; the system log says why', async () => {
    const created = await v2('POST', '/v2/pods', KEY, podBody('no-credential'));
    assert.equal(created.status, 201);
    assert.equal(field(created.body, 'registry'), null);
    const id = String(field(created.body, 'id'));
    const events = await podLogUntil(sim.baseUrl, KEY, id, 'source=system&tail=5000', /try 3 failed/);
    const lines = events.map((event) => event.line);
    assert.ok(lines.includes(`Pulling image ${PRIVATE}`), lines.join('\n'));
    assert.ok(lines.includes("Error response from daemon: pull access denied for ghcr.io/acme/private-job, repository does not exist or may require 'docker login': denied: unauthorized"), lines.join('\n'));
    // Backoff: each try waits twice as long as the one before.
    assert.deepEqual(lines.filter((line) => line.startsWith('Back-off')), [
      `Back-off pulling image "${PRIVATE}": try 1 failed, retrying in 100ms`,
      `Back-off pulling image "${PRIVATE}": try 2 failed, retrying in 200ms`,
      `Back-off pulling image "${PRIVATE}": try 3 failed, retrying in 400ms`,
    ]);
    assert.ok(!lines.some((line) => /Pulled image|Created container|Started container/.test(line)), lines.join('\n'));

    const pod = (await v2('GET', `/v2/pods/${id}`, KEY)).body;
    assert.deepEqual([field(pod, 'status'), field(pod, 'ssh', 'direct'), field(pod, 'runtime'), field(pod, 'cost'), field(pod, 'startedAt')], ['RUNNING', null, null, 0.69, null]);
    const sim0 = (await simPodsWithProcesses(sim.adminUrl)).find((candidate) => candidate.id === id);
    assert.deepEqual([sim0?.ready, sim0?.sshPort, sim0?.processes.length], [false, null, 0]);
    assert.equal(await simPodLogs(sim.adminUrl, id), '');

    // Stopped, it pulls no more; started again, it tries again from the first backoff.
    assert.equal((await v2('POST', `/v2/pods/${id}/action`, KEY, { action: 'stop' })).status, 200);
    const restarted = new Date().toISOString();
    assert.equal((await v2('POST', `/v2/pods/${id}/action`, KEY, { action: 'start' })).status, 200);
    await podLogUntil(sim.baseUrl, KEY, id, `source=system&since=${restarted}`, /try 1 failed, retrying in 100ms/);
    assert.equal((await v2('DELETE', `/v2/pods/${id}`, KEY)).status, 204);
    await assertNoLeaks(sim.adminUrl);
  });

  test('a credential with another password is refused with the registry\'s word; the right one pulls and the pod runs', async () => {
    const wrong = await createSimRegistry(sim.baseUrl, KEY, { name: 'wrong', username: USERNAME, password: 'not-it' });
    const right = await createSimRegistry(sim.baseUrl, KEY, { name: 'right', username: USERNAME, password: PASSWORD });
    const refused = await v2('POST', '/v2/pods', KEY, podBody('wrong-password', wrong.id));
    assert.equal(field(refused.body, 'registry'), wrong.id);
    const refusedId = String(field(refused.body, 'id'));
    await podLogUntil(sim.baseUrl, KEY, refusedId, 'source=system&tail=5000', /^Error response from daemon: Get "https:\/\/ghcr\.io\/v2\/": unauthorized: incorrect username or password$/);

    const [host, client] = [keyPair(), keyPair()];
    const runs = await v2('POST', '/v2/pods', KEY, sshdPodBody('right-password', host, client, { image: PRIVATE, registry: right.id }));
    assert.equal(runs.status, 201);
    const runsId = String(field(runs.body, 'id'));
    const conn = await sshConnect(await waitForSsh(sim, KEY, runsId), host, client);
    assert.equal((await sshExec(conn, 'echo pulled-and-running')).trim(), 'pulled-and-running');
    conn.end();
    const lines = (await podLogUntil(sim.baseUrl, KEY, runsId, 'source=system&tail=5000', /Started container/)).map((event) => event.line);
    assert.ok(lines.includes(`Pulled image ${PRIVATE}`), lines.join('\n'));

    // openapi-v2.json deleteRegistry: refused (400) while a pod uses the credential.
    const busy = await v2('DELETE', `/v2/registries/${right.id}`, KEY);
    assert.deepEqual(busy.body, { title: 'Bad Request', status: 400, detail: 'Registry credential is in use by a pod and cannot be deleted' });
    for (const id of [refusedId, runsId]) assert.equal((await v2('DELETE', `/v2/pods/${id}`, KEY)).status, 204);
    for (const id of [wrong.id, right.id]) assert.equal((await v2('DELETE', `/v2/registries/${id}`, KEY)).status, 204);
    await assertNoLeaks(sim.adminUrl);

    const admin = JSON.stringify(await simPods(sim.adminUrl)) + (await simPodLogs(sim.adminUrl, runsId));
    for (const text of [...answers, admin]) {
      assert.ok(!text.includes(PASSWORD) && !text.includes(USERNAME), `a credential in: ${text.slice(0, 300)}`);
    }
  });
});
