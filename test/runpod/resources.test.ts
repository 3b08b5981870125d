// The client's calls for a run's other resources against the simulator: a network volume's data center
// (404: not-found), and registry credentials (create, list by name, delete; the password in no answer
// and, when Runpod echoes it in an error, redacted).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRunpodClient, type RunpodClient } from '../../src/runpod/client.ts';
import { RunpodError } from '../../src/runpod/errors.ts';
import { RateLimiter } from '../../src/runpod/rate-limiter.ts';
import { redact } from '../../src/log.ts';
import { type RunningSimulator, startSimulator } from '../runpod-sim/server.ts';
import { capturedLogger } from './fixture-server.ts';

const KEY = 'rpa_RESOURCES0TEST0KEY0000000000000000';

describe('network volumes and registry credentials', () => {
  let sim: RunningSimulator;
  let client: RunpodClient;

  before(async () => {
    sim = await startSimulator({ apiKeys: [KEY], config: { networkVolumes: [{ id: 'nv-fixed', name: 'data', size: 20, dataCenter: 'US-TX-3' }] } });
    client = createRunpodClient({ apiKey: KEY, baseUrl: sim.baseUrl, limiter: new RateLimiter(), logger: capturedLogger().logger, retry: { baseDelayMs: 20, maxDelayMs: 100 } });
  });
  after(async () => {
    await client.close();
    await sim.stop();
  });

  it('reads a volume\'s data center; an unknown volume is not-found', async () => {
    const volume = await client.getNetworkVolume('nv-fixed');
    assert.equal(volume.dataCenter, 'US-TX-3');
    const missing = await client.getNetworkVolume('nv-none').then(() => assert.fail('read'), (error: unknown) => error);
    assert.ok(missing instanceof RunpodError);
    assert.equal(missing.kind, 'not-found');
  });

  it('creates, lists and deletes a registry credential; the password is never answered and is redacted once sent', async () => {
    const password = 'registry-PASSWORD-0123456789';
    const created = await client.createRegistry({ name: 'rpo-test-cred', username: 'ci', password });
    assert.deepEqual(Object.keys(created).sort(), ['id', 'name']);
    assert.ok((await client.listRegistries()).some((r) => r.id === created.id && r.name === 'rpo-test-cred'));
    assert.equal(redact(`echoed ${password}`).includes(password), false, 'the password joined the redaction set');
    await client.deleteRegistry(created.id);
    assert.equal((await client.listRegistries()).some((r) => r.id === created.id), false);
    const again = await client.deleteRegistry(created.id).then(() => assert.fail('deleted twice'), (error: unknown) => error);
    assert.ok(again instanceof RunpodError);
    assert.equal(again.kind, 'not-found');
  });
});
