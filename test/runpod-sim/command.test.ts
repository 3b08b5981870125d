// How a pod's command runs, judged from outside (HTTP, the pod's log and processes, TCP): `args`
// split into words and exec'd after the image's entrypoint with no shell added; ports published
// once assigned whether or not anything listens; an image's own sshd with a host key of its own.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { assertNoLeaks, simPodLogs, simPods, simPodsWithProcesses } from './client.ts';
import { parseConfig } from './config.ts';
import { startSimulator, type RunningSimulator } from './server.ts';
import { call, field, keyPair, shArgs, sshConnect, sshConnectOnce, sshExec, waitForSsh } from './testkit.ts';
import { eventually } from '../support/eventually.ts';

const KEY = 'sim-test-account-key-command';
const IMAGES = {
  ngc: 'nvcr.io/nvidia/sim:1',
  ownSshd: 'example/own-sshd:1',
};

/** What a TCP client sees: data (something speaks), or the connection dropped without a byte. */
function firstContact(port: number): Promise<'data' | 'dropped'> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const done = (what: 'data' | 'dropped'): void => {
      socket.destroy();
      resolve(what);
    };
    socket.once('data', () => done('data'));
    socket.once('error', () => done('dropped'));
    socket.once('close', () => done('dropped'));
  });
}

/** The host keys an sshd on `port` offers, as "type base64" lines (async: the relays live in this process). */
async function offeredKeys(port: number): Promise<string[]> {
  const scan = await promisify(execFile)('ssh-keyscan', ['-T', '5', '-p', String(port), '127.0.0.1'], { encoding: 'utf8' }).catch(() => ({ stdout: '' }));
  return scan.stdout.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#')).map((line) => line.split(' ').slice(1).join(' ')).sort();
}

describe('the container command', () => {
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSimulator({
      apiKeys: [KEY],
      config: {
        timings: { restartDelayMs: 200 },
        images: {
          [IMAGES.ngc]: { entrypoint: ['/bin/sh', '-c', 'echo "entrypoint $0 got $# words"; exec "$@"', 'nvidia_entrypoint'] },
          [IMAGES.ownSshd]: { entrypoint: ['/bin/sh', '-c', 'exec "$@"', 'start'], ownSshd: true },
        },
      },
    });
  });

  after(async () => {
    await sim.stop();
  });

  async function create(name: string, body: Record<string, unknown>): Promise<string> {
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name, image: 'plain:1', gpu: { id: 'NVIDIA A40' }, ...body } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return String(field(created.body, 'id'));
  }

  async function remove(id: string): Promise<void> {
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
  }

  const logsOf = async (id: string, pattern: RegExp): Promise<string> =>
    eventually(`${pattern} in the logs of ${id}`, async () => {
      const logs = await simPodLogs(sim.adminUrl, id);
      return pattern.test(logs) ? logs : undefined;
    });

  test('args are words exec\'d directly: quotes honoured, no expansion, operators are words', async () => {
    const id = await create('words', { args: `printf [%s] 'a b' "c\\"d" e\\ f $RUNPOD_POD_ID ; '|' && sleep 1000` });
    const logs = await logsOf(id, /\[a b\]/);
    assert.match(logs, /\[a b\]\[c"d\]\[e f\]\[\$RUNPOD_POD_ID\]\[;\]\[\|\]\[&&\]\[sleep\]\[1000\]/);
    // printf ended, so the container ended and restarts: nothing ran `sleep 1000` as a command.
    await eventually('a restart', async () => ((await simPods(sim.adminUrl)).find((p) => p.id === id)?.restarts ?? 0) >= 1 || undefined);
    await remove(id);
    await assertNoLeaks(sim.adminUrl);
  });

  test('a shell runs only when the args name one; a builtin as the first word is no program', async () => {
    const viaShell = await create('via-shell', { args: shArgs('echo "pod=$RUNPOD_POD_ID"; exec sleep 1000') });
    await logsOf(viaShell, new RegExp(`pod=${viaShell}`));
    const builtin = await create('builtin', { args: "exec sh -c 'sleep 1000'" });
    const logs = await logsOf(builtin, /container exited[^]*container exited/);
    assert.doesNotMatch(logs, /sleep 1000/);
    const pods = await simPodsWithProcesses(sim.adminUrl);
    assert.ok(pods.find((p) => p.id === viaShell)?.processes.some((proc) => proc.command === 'sleep 1000'));
    assert.ok((pods.find((p) => p.id === builtin)?.restarts ?? 0) >= 1, 'exec is not a program: the container restart-loops');
    await remove(viaShell);
    await remove(builtin);
    await assertNoLeaks(sim.adminUrl);
  });

  test('an image entrypoint gets the words appended, as Docker appends CMD to ENTRYPOINT', async () => {
    const id = await create('ngc', { image: IMAGES.ngc, args: "sh -c 'echo \"inner $0 $1\"; exec sleep 1000' zero 'one two'" });
    const logs = await logsOf(id, /inner/);
    assert.match(logs, /entrypoint nvidia_entrypoint got 5 words\n[^]*inner zero one two/);
    await remove(id);
    await assertNoLeaks(sim.adminUrl);
  });

  test('args that do not split (an unclosed quote): the container exits at once and restart-loops', async () => {
    const id = await create('unclosed', { args: "sh -c 'sleep 1000" });
    await eventually('two restarts', async () => ((await simPods(sim.adminUrl)).find((p) => p.id === id)?.restarts ?? 0) >= 2 || undefined);
    const logs = await simPodLogs(sim.adminUrl, id);
    assert.match(logs, /args do not split into words: unclosed single quote at offset 6/);
    assert.equal(field((await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).body, 'status'), 'RUNNING');
    await remove(id);
    await assertNoLeaks(sim.adminUrl);
  });

  test('empty args run pods.defaultArgs (the image CMD), split the same way', async () => {
    const id = await create('default', { args: '' });
    await eventually('sleep infinity', async () =>
      (await simPodsWithProcesses(sim.adminUrl)).find((p) => p.id === id)?.processes.some((proc) => proc.command === 'sleep infinity') || undefined);
    await remove(id);
    await assertNoLeaks(sim.adminUrl);
  });

  test('ssh.direct and runtime.ports appear once the port is assigned, before anything listens; connections are refused until sshd does', async () => {
    const host = keyPair();
    const client = keyPair();
    const script = [
      'sleep 3',
      'mkdir -p /root/.ssh && printf "%s\\n" "$PUBLIC_KEY" > /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys',
      'printf "%s\\n" "$TEST_HOST_KEY" > /etc/ssh/k && chmod 600 /etc/ssh/k',
      'exec /usr/sbin/sshd -D -e -p 22 -h /etc/ssh/k',
    ].join('\n');
    const id = await create('late-sshd', { ports: ['22/tcp'], env: { PUBLIC_KEY: client.public, TEST_HOST_KEY: host.private }, args: shArgs(script) });
    const port = await waitForSsh(sim, KEY, id);
    const pod = (await call(sim, 'GET', `/v2/pods/${id}`, { key: KEY })).body;
    assert.deepEqual(field(pod, 'runtime', 'ports'), [{ private: 22, public: port, type: 'tcp', ip: '127.0.0.1' }]);
    assert.equal((await simPodsWithProcesses(sim.adminUrl)).find((p) => p.id === id)?.processes.some((proc) => proc.command.startsWith('/usr/sbin/sshd')), false, 'published before sshd runs');
    assert.equal(await firstContact(port), 'dropped');
    await assert.rejects(sshConnectOnce(port, host, client));
    const conn = await sshConnect(port, host, client);
    assert.equal(await sshExec(conn, 'echo up'), 'up\n');
    conn.end();
    await remove(id);
    await assertNoLeaks(sim.adminUrl);
  });

  test('an image\'s own sshd answers on 22 with fresh host keys of its own, new in every container', async () => {
    const host = keyPair();
    const client = keyPair();
    const id = await create('own-sshd', { image: IMAGES.ownSshd, ports: ['22/tcp'], env: { PUBLIC_KEY: client.public }, args: 'sleep infinity' });
    const port = await waitForSsh(sim, KEY, id);
    // ssh-keyscan makes one connection per key type; on a loaded machine one may time out: scan again.
    const first = await eventually('the image\'s sshd', async () => {
      const keys = await offeredKeys(port);
      return keys.length >= 2 ? keys : undefined;
    });
    assert.deepEqual(first.map((key) => key.split(' ')[0]), ['ecdsa-sha2-nistp256', 'ssh-ed25519']);
    // Pinned to another key: refused in the handshake (no authentication was tried).
    await assert.rejects(sshConnect(port, host, client), /verification failed/i);
    assert.doesNotMatch(await simPodLogs(sim.adminUrl, id), /Accepted|Failed|authenticating user/);
    assert.equal((await call(sim, 'POST', `/v2/pods/${id}/action`, { key: KEY, body: { action: 'restart' } })).status, 200);
    const second = await eventually('the sshd of the restarted container', async () => {
      const keys = await offeredKeys(await waitForSsh(sim, KEY, id));
      return keys.length >= 2 ? keys : undefined;
    });
    assert.equal(second.filter((key) => first.includes(key)).length, 0, 'new host keys in the new container');
    await remove(id);
    await assertNoLeaks(sim.adminUrl);
  });

  test('config: ownSshd needs an entrypoint; unknown image fields are refused', () => {
    assert.throws(() => parseConfig({ images: { x: { ownSshd: true } } }), /images\.x\.ownSshd: [^;]*needs an entrypoint/);
    assert.throws(() => parseConfig({ images: { x: { entrypoint: [] } } }), /images\.x\.entrypoint/);
    assert.throws(() => parseConfig({ images: { x: { cmd: ['a'] } } }), /cmd/);
    assert.deepEqual(parseConfig({}).images, {});
  });
});
