// The client's read of a pod's log stream against the simulator: the replay of an endless event
// stream comes back as lines once the stream is quiet, filtered by source; an unknown pod is not-found.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createRunpodClient, type RunpodClient } from '../../src/runpod/client.ts';
import { RunpodError } from '../../src/runpod/errors.ts';
import { parseLogEvents } from '../../src/runpod/pod-logs.ts';
import { RateLimiter } from '../../src/runpod/rate-limiter.ts';
import { assertNoLeaks } from '../runpod-sim/client.ts';
import { type RunningSimulator, startSimulator } from '../runpod-sim/server.ts';
import { eventually } from '../support/eventually.ts';
import { capturedLogger } from './fixture-server.ts';

const KEY = 'rpa_PODLOGS0TEST0KEY000000000000000000';

describe('pod logs', () => {
  let sim: RunningSimulator;
  let client: RunpodClient;

  before(async () => {
    sim = await startSimulator({ apiKeys: [KEY] });
    client = createRunpodClient({ apiKey: KEY, baseUrl: sim.baseUrl, limiter: new RateLimiter(), logger: capturedLogger().logger, retry: { baseDelayMs: 20, maxDelayMs: 100 } });
  });
  after(async () => {
    await client.close();
    await sim.stop();
  });

  it('parses events: log lines kept, comments and other data skipped', () => {
    const text = ': keep-alive\n\nid: 1\ndata: {"ts":"2026-12-04T00:00:00.000Z","source":"system","line":"Pulling image x"}\n\ndata: not json\n\ndata: {"other":1}\n\n';
    assert.deepEqual(parseLogEvents(text), [{ ts: '2026-12-04T00:00:00.000Z', source: 'system', line: 'Pulling image x' }]);
  });

  it('reads the system lines of a pod (the stream stays open: the call ends when it is quiet), and not-found for an unknown pod', async () => {
    const pod = await client.createPod({ name: `logs-${randomUUID().slice(0, 8)}`, image: 'busybox:sim', gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 }, args: 'sleep 600' });
    const lines = await eventually('the container start in the system lines', async () => {
      const read = await client.podLogs(pod.id, { source: 'system', tail: 50 });
      return read.some((l) => /Started container/.test(l.line)) ? read : undefined;
    });
    assert.ok(lines.every((l) => l.source === 'system'));
    assert.ok(lines.some((l) => /Pulling image busybox:sim/.test(l.line)), JSON.stringify(lines));
    const unknown = await client.podLogs('nosuchpod000', { source: 'system' }).then(() => assert.fail('read'), (error: unknown) => error);
    assert.ok(unknown instanceof RunpodError);
    assert.equal(unknown.kind, 'not-found');
    await client.deletePod(pod.id);
    await assertNoLeaks(sim.adminUrl);
  });
});
