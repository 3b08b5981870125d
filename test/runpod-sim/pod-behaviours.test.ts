// Pod behaviours of the live service, as config or fault, judged from outside (HTTP and the pod's
// processes): containers that exit on their own (restart loop, EXITED, ERROR), a pod key that may
// read its pod but not delete it, an image without curl.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertNoLeaks, injectFault, simPodLogs, simPods, simPodsWithProcesses } from './client.ts';
import { startSimulator, type RunningSimulator } from './server.ts';
import { call, field, shArgs, waitForSsh } from './testkit.ts';
import { eventually } from '../support/eventually.ts';

const KEY = 'sim-test-account-key-behaviours';

async function sleepers(sim: RunningSimulator, id: string): Promise<number> {
  const pod = (await simPodsWithProcesses(sim.adminUrl)).find((p) => p.id === id);
  return pod?.processes.filter((proc) => proc.command.startsWith('sleep 4242')).length ?? -1;
}

/** A pod whose container sleeps and listens on 22 (socat stands in for sshd: readiness only needs a first byte). */
const listener = (name: string, image = 'x'): Record<string, unknown> => ({
  name, image, gpu: { id: 'NVIDIA A40' }, ports: ['22/tcp'],
  args: shArgs('socat TCP-LISTEN:22,fork,reuseaddr SYSTEM:"echo SSH-2.0-fake" & exec sleep 4242'),
});

describe('pod behaviours', () => {
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSimulator({
      apiKeys: [KEY],
      config: {
        timings: { restartDelayMs: 200 },
        images: { 'no-curl:1': { withoutCommands: ['curl', 'sha256sum'] } },
        podKeys: { refuse: ['delete', 'terminate'] },
      },
    });
  });

  after(async () => {
    await sim.stop();
  });

  test('container-exit (RUNNING): the container ends on its own and is restarted, twice, with new ports each time', async () => {
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: listener('loop') });
    const id = String(field(created.body, 'id'));
    const first = await waitForSsh(sim, KEY, id);
    await injectFault(sim.adminUrl, { fault: 'container-exit', podId: id, count: 2 });
    const pod = (await simPods(sim.adminUrl)).find((p) => p.id === id);
    assert.equal(pod?.restarts, 2);
    assert.equal(pod.status, 'RUNNING');
    const third = await waitForSsh(sim, KEY, id);
    assert.notEqual(third, first);
    await eventually('the restarted container', async () => ((await sleepers(sim, id)) >= 1 ? true : undefined));
    assert.equal(await sleepers(sim, id), 1, 'one container runs, not three');
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
    await assertNoLeaks(sim.adminUrl);
  });

  for (const status of ['EXITED', 'ERROR'] as const) {
    test(`container-exit (${status}): the pod stays ${status}, its container gone, its disk billed, until deleted or started`, async () => {
      const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: listener(`gone-${status}`) });
      const id = String(field(created.body, 'id'));
      await waitForSsh(sim, KEY, id);
      await injectFault(sim.adminUrl, { fault: 'container-exit', podId: id, status });
      const seen = await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY });
      assert.equal(field(seen.body, 'status'), status);
      assert.deepEqual(field(seen.body, 'actions'), ['start', 'terminate']);
      assert.equal(field(seen.body, 'ssh', 'direct'), null);
      assert.equal(field(seen.body, 'runtime'), null);
      assert.equal(field(seen.body, 'cost'), 0.4);
      const listed = field((await call(sim, 'GET', '/v2/pods', { key: KEY })).body, 'pods') as unknown[];
      assert.deepEqual(listed.map((p) => [field(p, 'id'), field(p, 'status')]), [[id, status]]);
      assert.equal(await sleepers(sim, id), 0, 'the container is gone');
      // Not restarted: it stays so.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.equal((await simPods(sim.adminUrl)).find((p) => p.id === id)?.restarts, 0);
      assert.equal(field((await call(sim, 'POST', `/v2/pods/${id}/action`, { key: KEY, body: { action: 'start' } })).body, 'status'), 'RUNNING');
      await waitForSsh(sim, KEY, id);
      // ssh.direct comes with the port assignment, before the container's command has run.
      await eventually('the started container', async () => ((await sleepers(sim, id)) === 1 ? true : undefined));
      assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
      await assertNoLeaks(sim.adminUrl);
    });
  }

  test('podKeys.refuse: the pod key reads its pod but DELETE and terminate are 403 (nothing changes); stop works; the account key deletes', async () => {
    const script = [
      'auth="Authorization: Bearer $RUNPOD_API_KEY"',
      'echo "get:$(curl -s -o /dev/null -w %{http_code} -H "$auth" "$API/pods/$RUNPOD_POD_ID")"',
      'echo "delete:$(curl -s -w %{http_code} -X DELETE -H "$auth" "$API/pods/$RUNPOD_POD_ID")"',
      'echo "terminate:$(curl -s -o /dev/null -w %{http_code} -X POST -H "$auth" -H "Content-Type: application/json" --data \'{"action":"terminate"}\' "$API/pods/$RUNPOD_POD_ID/action")"',
      'echo "still:$(curl -s -o /dev/null -w %{http_code} -H "$auth" "$API/pods/$RUNPOD_POD_ID")"',
      'curl -s -o /dev/null -X POST -H "$auth" -H "Content-Type: application/json" --data \'{"action":"stop"}\' "$API/pods/$RUNPOD_POD_ID/action"',
      'exec sleep 4242',
    ].join('\n');
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'undeletable', image: 'x', gpu: { id: 'NVIDIA A40' }, env: { API: sim.baseUrl }, args: shArgs(script) } });
    const id = String(field(created.body, 'id'));
    const stopped = await eventually('the pod to stop itself', async () => {
      const pod = (await simPods(sim.adminUrl)).find((p) => p.id === id);
      return pod?.status === 'EXITED' ? pod : undefined;
    });
    assert.equal(stopped.deletedAt, null);
    const logs = await simPodLogs(sim.adminUrl, id);
    assert.match(logs, /get:200/);
    assert.match(logs, /delete:\{"status":403,"title":"Forbidden","detail":"access denied"\}403/);
    assert.match(logs, /terminate:403/);
    assert.match(logs, /still:200/);
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
    await assertNoLeaks(sim.adminUrl);
  });

  test('images.<name>.withoutCommands: that image has no curl (by name, path or listing); other images and the machine keep it', async () => {
    const probe = 'for c in curl sha256sum wget sh; do if command -v $c >/dev/null; then echo "has:$c"; else echo "lacks:$c"; fi; done; '
      + 'ls /usr/bin/curl >/dev/null 2>&1 && echo listed:curl; /usr/bin/curl --version >/dev/null 2>&1 && echo runs:curl; exec sleep 4242';
    const bare = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'bare', image: 'no-curl:1', gpu: { id: 'NVIDIA A40' }, args: shArgs(probe) } });
    const full = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'full', image: 'no-curl:2', gpu: { id: 'NVIDIA A40' }, args: shArgs(probe) } });
    const bareId = String(field(bare.body, 'id'));
    const fullId = String(field(full.body, 'id'));
    const bareLogs = await eventually('the probe', async () => ((await simPodLogs(sim.adminUrl, bareId)).includes('has:sh') ? simPodLogs(sim.adminUrl, bareId) : undefined));
    const fullLogs = await eventually('the probe', async () => ((await simPodLogs(sim.adminUrl, fullId)).includes('runs:curl') ? simPodLogs(sim.adminUrl, fullId) : undefined));
    assert.deepEqual(bareLogs.trim().split('\n'), ['lacks:curl', 'lacks:sha256sum', 'has:wget', 'has:sh']);
    assert.deepEqual(fullLogs.trim().split('\n'), ['has:curl', 'has:sha256sum', 'has:wget', 'has:sh', 'listed:curl', 'runs:curl']);
    // After a restart too (a fresh container), and the machine itself is untouched.
    await injectFault(sim.adminUrl, { fault: 'container-exit', podId: bareId });
    await eventually('the second probe', async () => ((await simPodLogs(sim.adminUrl, bareId)).split('has:sh').length === 3 ? true : undefined));
    assert.doesNotMatch(await simPodLogs(sim.adminUrl, bareId), /has:curl|listed:curl|runs:curl/);
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${bareId}`, { key: KEY })).status, 204);
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${fullId}`, { key: KEY })).status, 204);
    await assertNoLeaks(sim.adminUrl);
  });
});
