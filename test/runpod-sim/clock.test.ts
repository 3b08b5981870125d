// The clock-skew fault: the pod's wall clock is off for every reader of date, in the running container
// and in later ones, while a conversion of a given time is not. A simulator of its own: the shared one of
// faults.test.ts spends its per-minute quota on its own tests.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertNoLeaks, injectFault, simPods } from './client.ts';
import { startSimulator, type RunningSimulator } from './server.ts';
import { call, field, keyPair, sshConnect, sshdPodBody, sshExec, waitForSsh } from './testkit.ts';
import { eventually } from '../support/eventually.ts';

const KEY = 'sim-test-account-key-clock';

describe('clock-skew', () => {
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSimulator({ apiKeys: [KEY], config: { rateLimits: { enabled: false } } });
  });

  after(async () => {
    await sim.stop();
  });

  test('clock-skew shifts the pod\'s wall clock (every reader of date, now and after a restart), never a conversion', async () => {
    const host = keyPair();
    const client = keyPair();
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: sshdPodBody('skewed', host, client) });
    const id = String(field(created.body, 'id'));
    const port = await waitForSsh(sim, KEY, id);
    const podClock = async (): Promise<{ offset: number; converted: string; iso: string }> => {
      const conn = await sshConnect(port, host, client);
      const before = Date.now() / 1000;
      const [now = '', converted = '', iso = ''] = (await sshExec(conn, "date +%s; date -u -d '2026-03-13 20:00:00' +%s; date -u +%Y-%m-%dT%H:%M:%SZ")).trim().split('\n');
      conn.end();
      return { offset: Number(now) - Math.round((before + Date.now() / 1000) / 2), converted, iso };
    };
    const near = (actual: number, expected: number): boolean => Math.abs(actual - expected) <= 3;
    await injectFault(sim.adminUrl, { fault: 'clock-skew', podId: id, offsetSeconds: 7200 });
    const ahead = await podClock();
    assert.ok(near(ahead.offset, 7200), `the pod's clock is ${ahead.offset} s off`);
    assert.equal(ahead.converted, '1773432000', 'date -d converts a given time, it reads no clock');
    assert.ok(near(Date.parse(ahead.iso) / 1000 - Date.now() / 1000, 7200), ahead.iso);
    await injectFault(sim.adminUrl, { fault: 'clock-skew', podId: id, offsetSeconds: -7200 });
    assert.ok(near((await podClock()).offset, -7200), 'applied again: the new offset');
    assert.equal((await simPods(sim.adminUrl)).find((p) => p.id === id)?.clockOffsetSeconds, -7200);
    // The host's clock, not the container's: a new container starts skewed.
    assert.equal((await call(sim, 'POST', `/v2/pods/${id}/action`, { key: KEY, body: { action: 'restart' } })).status, 200);
    const restarted = await eventually('the restarted container\'s sshd', async () => podClock().catch(() => undefined), 20000);
    assert.ok(near(restarted.offset, -7200), `after a restart the pod's clock is ${restarted.offset} s off`);
    const missing = await fetch(`${sim.adminUrl}/faults`, { method: 'POST', body: JSON.stringify({ fault: 'clock-skew', podId: 'nosuchpod', offsetSeconds: 60 }) });
    assert.equal(missing.status, 400);
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
    await assertNoLeaks(sim.adminUrl);
  });
});
