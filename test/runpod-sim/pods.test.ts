// Real pods: SSH on mapped ports, isolation, injected env, pod-scoped keys, process-tree kills.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { assertNoLeaks, simPodLogs, simPods, simPodsWithProcesses } from './client.ts';
import { startSimulator, type RunningSimulator } from './server.ts';
import { call, envOf, field, keyPair, shArgs, sshConnect, sshdPodBody, sshExec, waitForSsh } from './testkit.ts';
import { eventually } from '../support/eventually.ts';

const KEY = 'sim-test-account-key-pods';

/** Running (not a zombie awaiting its reaper) under the same pid. */
function alive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

describe('real pods', () => {
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSimulator({ apiKeys: [KEY], config: { timings: { restartDelayMs: 200 } } });
  });

  after(async () => {
    await sim.stop();
  });

  test('two pods both listening on port 22 are reachable on their own mapped ports, isolated from each other', async () => {
    const hostA = keyPair();
    const hostB = keyPair();
    const client = keyPair();
    const a = await call(sim, 'POST', '/v2/pods', { key: KEY, body: sshdPodBody('ssh-a', hostA, client) });
    const b = await call(sim, 'POST', '/v2/pods', { key: KEY, body: sshdPodBody('ssh-b', hostB, client) });
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    // Measured on v2: RUNNING at once, with runtime and ssh.direct null until the port answers.
    assert.equal(field(a.body, 'status'), 'RUNNING');
    assert.equal(field(a.body, 'runtime'), null);
    assert.equal(field(a.body, 'ssh', 'direct'), null);
    const idA = String(field(a.body, 'id'));
    const idB = String(field(b.body, 'id'));

    const portA = await waitForSsh(sim, KEY, idA);
    const portB = await waitForSsh(sim, KEY, idB);
    assert.notEqual(portA, portB);
    const podA = (await call(sim, 'GET', `/v2/pods/${idA}`, { key: KEY })).body;
    assert.deepEqual(field(podA, 'ssh', 'direct'), { host: '127.0.0.1', port: portA, username: 'root', command: `ssh root@127.0.0.1 -p ${portA}` });
    assert.deepEqual(field(podA, 'runtime', 'ports'), [{ private: 22, public: portA, type: 'tcp', ip: '127.0.0.1' }]);
    assert.equal(typeof field(podA, 'runtime', 'uptime'), 'number');

    // Each mapped port leads to its own pod's sshd (host keys are pinned: the wrong pod is refused).
    const connA = await sshConnect(portA, hostA, client);
    const connB = await sshConnect(portB, hostB, client);
    const envA = envOf(await sshExec(connA, 'cat /proc/1/environ'));
    assert.equal(envA.RUNPOD_POD_ID, idA);
    assert.equal(envA.RUNPOD_TCP_PORT_22, String(portA));
    assert.equal(envOf(await sshExec(connB, 'cat /proc/1/environ')).RUNPOD_POD_ID, idB);
    await assert.rejects(sshConnect(portA, hostB, client));

    // Writable places are the pod's own: not another pod's, not the machine's.
    await sshExec(connA, 'echo a > /workspace/mine && echo a > /root/mine && echo a > /tmp/mine');
    assert.equal(await sshExec(connB, 'ls /workspace /root /tmp | grep -c mine || true'), '0\n');
    assert.deepEqual(readdirSync('/workspace').filter((name) => name === 'mine'), []);
    assert.match(await sshExec(connA, 'touch /etc/escape 2>&1 || echo refused'), /refused/);
    assert.equal(await sshExec(connA, 'stat -c %a /root'), '755\n');

    // Delete with an SSH session open: the session dies with the pod, the port is freed.
    const closed = new Promise<void>((resolve) => connA.once('close', () => resolve()));
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${idA}`, { key: KEY })).status, 204);
    await closed;
    assert.equal((await call(sim, 'GET', `/v2/pods/${idA}`, { key: KEY })).status, 404);
    const list = (await call(sim, 'GET', '/v2/pods', { key: KEY })).body;
    assert.deepEqual((field(list, 'pods') as unknown[]).map((pod) => field(pod, 'id')), [idB]);
    connB.end();
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${idB}`, { key: KEY })).status, 204);
    await assertNoLeaks(sim.adminUrl);
  });

  test('a pod sees the env Runpod injects; its own key deletes its own pod and gets 403 elsewhere', async () => {
    const other = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'bystander', image: 'x', gpu: { id: 'NVIDIA A40' } } });
    const otherId = String(field(other.body, 'id'));
    const script = [
      'echo "env:$RUNPOD_POD_ID|$RUNPOD_DC_ID|$RUNPOD_GPU_COUNT|$RUNPOD_PUBLIC_IP|$RUNPOD_TCP_PORT_22|$RUNPOD_POD_HOSTNAME|$MY_VAR|$HOME"',
      'auth="Authorization: Bearer $RUNPOD_API_KEY"',
      'echo "own:$(curl -s -o /dev/null -w %{http_code} -H "$auth" "$API/pods/$RUNPOD_POD_ID")"',
      'echo "other:$(curl -s -o /dev/null -w %{http_code} -H "$auth" "$API/pods/$OTHER")"',
      'echo "otherdelete:$(curl -s -o /dev/null -w %{http_code} -X DELETE -H "$auth" "$API/pods/$OTHER")"',
      'echo "list:$(curl -s -o /dev/null -w %{http_code} -H "$auth" "$API/pods")"',
      'echo "catalog:$(curl -s -o /dev/null -w %{http_code} -H "$auth" "$API/catalog/gpus")"',
      'curl -s -X DELETE -H "$auth" "$API/pods/$RUNPOD_POD_ID"',
      'sleep infinity',
    ].join('\n');
    const created = await call(sim, 'POST', '/v2/pods', {
      key: KEY,
      body: { name: 'self-deleter', image: 'x', gpu: { id: 'NVIDIA A40', count: 2 }, ports: ['22/tcp'], env: { MY_VAR: 'mine', API: sim.baseUrl, OTHER: otherId }, args: shArgs(script) },
    });
    assert.equal(created.status, 201);
    const id = String(field(created.body, 'id'));
    const pod = await eventually('the pod to delete itself', async () => (await simPods(sim.adminUrl)).find((p) => p.id === id && p.deletedAt !== null));
    assert.equal(pod.deletedBy, 'pod');
    const logs = await simPodLogs(sim.adminUrl, id);
    const env = /env:(.*)/.exec(logs)?.[1]?.split('|') ?? [];
    assert.equal(env[0], id);
    assert.equal(env[1], pod.dataCenterId);
    assert.equal(env[2], '2');
    assert.equal(env[3], '127.0.0.1');
    assert.match(env[4] ?? '', /^\d+$/);
    assert.match(env[5] ?? '', new RegExp(`^${id}-[0-9a-f]{8}$`));
    assert.deepEqual(env.slice(6), ['mine', '/root']);
    assert.match(logs, /own:200/);
    assert.match(logs, /other:403/);
    assert.match(logs, /otherdelete:403/);
    assert.match(logs, /list:403/);
    assert.match(logs, /catalog:403/);
    assert.equal((await call(sim, 'GET', `/v2/pods/${otherId}`, { key: KEY })).status, 200);
    // The pod key cannot act on the account's behalf from outside either.
    assert.equal((await call(sim, 'GET', '/v2/pods', { key: pod.podApiKey })).status, 403);
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${otherId}`, { key: KEY })).status, 204);
    await assertNoLeaks(sim.adminUrl);
  });

  test('delete kills the whole process tree, daemons and detached sessions included', async () => {
    const args = shArgs('sleep 3001 & (setsid sh -c "sleep 3002 & exec sleep 3003" &) ; nohup sleep 3004 >/dev/null 2>&1 & exec sleep infinity');
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'tree', image: 'x', gpu: { id: 'NVIDIA A40' }, args } });
    const id = String(field(created.body, 'id'));
    const before = await eventually('the tree to start', async () => {
      const pod = (await simPodsWithProcesses(sim.adminUrl)).find((p) => p.id === id);
      return pod && pod.processes.filter((proc) => proc.command.startsWith('sleep 300')).length === 4 ? pod : undefined;
    });
    assert.ok(before.processes.length >= 6);
    // Without ?processes=1 the list is only the pods' states: no /proc scan for a poll.
    const plain = await (await fetch(`${sim.adminUrl}/pods`)).json() as { pods: Record<string, unknown>[] };
    assert.deepEqual(plain.pods.filter((p) => 'processes' in p), []);
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
    const afterDelete = (await simPodsWithProcesses(sim.adminUrl)).find((p) => p.id === id);
    assert.deepEqual(afterDelete?.processes, []);
    assert.equal(afterDelete.status, 'TERMINATED');
    assert.equal(afterDelete.deletedBy, 'account');
    const survivors = before.processes.filter((proc) => alive(proc.pid));
    assert.deepEqual(survivors, []);
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 404);
    await assertNoLeaks(sim.adminUrl);
  });

  test('a container whose main process exits is restarted with new ports, keeping /workspace', async () => {
    const args = shArgs('echo run >> /workspace/runs; echo "runs:$(wc -l < /workspace/runs) root:$(ls /root | wc -l) port:$RUNPOD_TCP_PORT_22"; touch /root/stale; sleep 0.2');
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'crashloop', image: 'x', gpu: { id: 'NVIDIA A40' }, ports: ['22/tcp'], args } });
    const id = String(field(created.body, 'id'));
    const pod = await eventually('two restarts', async () => {
      const found = (await simPods(sim.adminUrl)).find((p) => p.id === id);
      return found && found.restarts >= 2 && /runs:3/.test(await simPodLogs(sim.adminUrl, id)) ? found : undefined;
    });
    assert.equal(pod.status, 'RUNNING');
    const logs = await simPodLogs(sim.adminUrl, id);
    const runs = [...logs.matchAll(/runs:(\d+) root:(\d+) port:(\d+)/g)].slice(0, 3);
    assert.deepEqual(runs.map((run) => [run[1], run[2]]), [['1', '0'], ['2', '0'], ['3', '0']]);
    assert.equal(new Set(runs.map((run) => run[3])).size, 3, `port mappings: ${runs.map((run) => run[3]).join(', ')}`);
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
    await assertNoLeaks(sim.adminUrl);
  });

  test('stop, start, restart and terminate actions', async () => {
    const host = keyPair();
    const client = keyPair();
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: sshdPodBody('actions', host, client) });
    const id = String(field(created.body, 'id'));
    const firstPort = await waitForSsh(sim, KEY, id);

    const stopped = await call(sim, 'POST', `/v2/pods/${id}/action`, { key: KEY, body: { action: 'stop' } });
    assert.equal(stopped.status, 200);
    assert.equal(field(stopped.body, 'status'), 'EXITED');
    assert.deepEqual(field(stopped.body, 'actions'), ['start', 'terminate']);
    assert.equal(field(stopped.body, 'ssh', 'direct'), null);
    assert.equal(field(stopped.body, 'runtime'), null);
    const whileStopped = (await simPodsWithProcesses(sim.adminUrl)).find((p) => p.id === id);
    assert.ok(whileStopped?.processes.every((proc) => !proc.command.includes('sshd')), 'sshd killed by stop');
    const conflict = await call(sim, 'POST', `/v2/pods/${id}/action`, { key: KEY, body: { action: 'stop' } });
    assert.equal(conflict.status, 409);
    assert.equal(field(conflict.body, 'title'), 'Conflict');

    const started = await call(sim, 'POST', `/v2/pods/${id}/action`, { key: KEY, body: { action: 'start' } });
    assert.equal(started.status, 200);
    assert.equal(field(started.body, 'status'), 'RUNNING');
    const secondPort = await waitForSsh(sim, KEY, id);
    assert.notEqual(secondPort, firstPort);
    const conn = await sshConnect(secondPort, host, client);
    assert.equal(await sshExec(conn, 'echo ok'), 'ok\n');
    conn.end();

    const restarted = await call(sim, 'POST', `/v2/pods/${id}/action`, { key: KEY, body: { action: 'restart' } });
    assert.equal(restarted.status, 200);
    assert.equal(await waitForSsh(sim, KEY, id), secondPort);

    const terminated = await call(sim, 'POST', `/v2/pods/${id}/action`, { key: KEY, body: { action: 'terminate' } });
    assert.equal(terminated.status, 204);
    assert.equal(terminated.body, null);
    assert.equal((await call(sim, 'POST', `/v2/pods/${id}/action`, { key: KEY, body: { action: 'start' } })).status, 404);
    await assertNoLeaks(sim.adminUrl);
  });
});
