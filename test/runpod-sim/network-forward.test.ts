// network.forward: a pod reaches a loopback service of this machine on its own 127.0.0.1, as a real
// pod reaches the internet; without the option it reaches nothing but itself and the API.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { assertNoLeaks, simPodLogs } from './client.ts';
import { parseConfig } from './config.ts';
import { startSimulator, type RunningSimulator } from './server.ts';
import { call, field, shArgs } from './testkit.ts';
import { eventually } from '../support/eventually.ts';

const KEY = 'sim-test-account-key-forward';
// Below the kernel's ephemeral range, so never the simulator's own (random) port.
const POD_PORT = 8333;

/** A pod that PUTs 1 MiB of random bytes to 127.0.0.1:POD_PORT with curl and logs what it got. */
const uploader = (name: string): Record<string, unknown> => ({
  name, image: 'x', gpu: { id: 'NVIDIA A40' },
  args: shArgs([
    'head -c 1048576 /dev/urandom > /tmp/blob',
    'echo "local $(sha256sum < /tmp/blob | cut -d" " -f1)"',
    `answer=$(curl -sS --max-time 20 -T /tmp/blob http://127.0.0.1:${POD_PORT}/blob 2>&1)`,
    'echo "curl exit $? answer $answer"',
    'exec sleep 4242',
  ].join('\n')),
});

/** Answers each PUT with the SHA-256 of its body and the token, so the pod shows it reached this server. */
async function hashingServer(token: string): Promise<{ server: Server; port: number; requests: string[] }> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const hash = createHash('sha256');
    req.on('data', (chunk: Buffer) => hash.update(chunk));
    req.on('end', () => {
      requests.push(`${req.method ?? ''} ${req.url ?? ''}`);
      res.end(`${token} ${hash.digest('hex')}`);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  return { server, port: address !== null && typeof address === 'object' ? address.port : 0, requests };
}

/** Creates the uploader pod, waits for its curl to finish, deletes the pod; returns its log lines. */
async function runUploader(sim: RunningSimulator, name: string): Promise<{ local: string; curl: string }> {
  const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: uploader(name) });
  assert.equal(created.status, 201);
  const id = String(field(created.body, 'id'));
  const logs = await eventually(`the curl of ${name}`, async () => {
    const text = await simPodLogs(sim.adminUrl, id);
    return text.includes('curl exit') ? text : undefined;
  }, 40_000);
  assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
  const line = (prefix: string): string => logs.split('\n').find((l) => l.startsWith(prefix))?.slice(prefix.length) ?? '';
  return { local: line('local '), curl: line('curl exit ') };
}

describe('network.forward', () => {
  let upstream: Awaited<ReturnType<typeof hashingServer>>;
  const token = randomBytes(8).toString('hex');

  before(async () => {
    upstream = await hashingServer(token);
  });

  after(async () => {
    await new Promise<void>((resolve) => upstream.server.close(() => resolve()));
  });

  test('a pod PUTs with curl to its 127.0.0.1:<podPort> and reaches the loopback server outside, every byte', async () => {
    const sim = await startSimulator({ apiKeys: [KEY], config: { network: { forward: [{ podPort: POD_PORT, hostPort: upstream.port }] } } });
    try {
      const { local, curl } = await runUploader(sim, 'forwarded');
      assert.match(local, /^[0-9a-f]{64}$/);
      assert.equal(curl, `0 answer ${token} ${local}`, 'curl succeeded and the server hashed the very bytes the pod sent');
      assert.deepEqual(upstream.requests, ['PUT /blob']);
      await assertNoLeaks(sim.adminUrl);
    } finally {
      await sim.stop();
    }
  });

  test('without network.forward the same pod cannot connect (curl exit 7) and the server sees nothing', async () => {
    const seen = upstream.requests.length;
    const sim = await startSimulator({ apiKeys: [KEY] });
    try {
      const { curl } = await runUploader(sim, 'isolated');
      assert.match(curl, /^7 answer curl: \(7\) Failed to connect to 127\.0\.0\.1 port 8333/);
      assert.equal(upstream.requests.length, seen);
      await assertNoLeaks(sim.adminUrl);
    } finally {
      await sim.stop();
    }
  });

  test('a forward to a host port where nothing listens: the pod\'s connection is accepted, then closed (curl exit 52)', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const address = closed.address();
    const port = address !== null && typeof address === 'object' ? address.port : 0;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const sim = await startSimulator({ apiKeys: [KEY], config: { network: { forward: [{ podPort: POD_PORT, hostPort: port }] } } });
    try {
      const { curl } = await runUploader(sim, 'nothing-there');
      // 52 (empty reply) as a rule; 55/56 (send/receive failure) if the close meets the upload mid-way.
      assert.match(curl, /^(52|55|56) answer curl: \((52|55|56)\)/);
      await assertNoLeaks(sim.adminUrl);
    } finally {
      await sim.stop();
    }
  });

  test('config: a pod port forwarded twice, or out of range, is an error naming the field', () => {
    assert.throws(
      () => parseConfig({ network: { forward: [{ podPort: 80, hostPort: 1000 }, { podPort: 80, hostPort: 1001 }] } }),
      /network\.forward\[1\]\.podPort: [^;]*port 80 is forwarded twice/,
    );
    assert.throws(() => parseConfig({ network: { forward: [{ podPort: 80, hostPort: 70000 }] } }), /network\.forward\[0\]\.hostPort/);
  });
});
