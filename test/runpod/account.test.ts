// The client and the account-wide refusals of the 2026-12 v2 docs: the spend limit, scoped keys and
// GET /v2/account/limits. Classification from bodies first (pure), then against the simulator.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createRunpodClient, type RunpodClient } from '../../src/runpod/client.ts';
import { RunpodError, classifyResponse, type RunpodErrorKind } from '../../src/runpod/errors.ts';
import { RateLimiter } from '../../src/runpod/rate-limiter.ts';
import { assertNoLeaks } from '../runpod-sim/client.ts';
import { type RunningSimulator, startSimulator } from '../runpod-sim/server.ts';
import { capturedLogger } from './fixture-server.ts';

const kindOf = (operation: 'createPod' | 'listPods', status: number, detail: string): RunpodErrorKind =>
  classifyResponse({ operation, status, body: { title: 'x', status, detail } }).kind;

describe('classification of account-wide refusals', () => {
  it('a spend-limit refusal is spend-limit whatever plausible status carries it, never capacity', () => {
    const detail = "Spend limit reached: this pod ($0.69/hr) would bring the account's running resources to $80.38/hr, above its spend limit of $80.00/hr.";
    for (const status of [400, 402, 403]) assert.equal(kindOf('createPod', status, detail), 'spend-limit', String(status));
    assert.equal(kindOf('createPod', 400, 'You have reached your spending limit'), 'spend-limit');
  });

  it('a 403 about the key is forbidden, on a create too; other Runpod 403s on a create stay capacity (pool access)', () => {
    assert.equal(kindOf('createPod', 403, 'API key is missing the required scope pods:write for POST /v2/pods'), 'forbidden');
    assert.equal(kindOf('createPod', 403, 'This API key does not have permission to create pods'), 'forbidden');
    assert.equal(kindOf('createPod', 403, 'read-only API key'), 'forbidden');
    assert.equal(kindOf('createPod', 403, 'access denied'), 'capacity');
    assert.equal(kindOf('listPods', 403, 'API key is missing the required scope pods:read for GET /v2/pods'), 'forbidden');
  });
});

const KEY = 'rpa_ACCOUNT0TEST0KEY000000000000000000';
const SCOPED = 'rpa_ACCOUNT0TEST0SCOPED0000000000000000';

describe('the client against the simulator', () => {
  let sim: RunningSimulator;
  const client = (apiKey: string): RunpodClient =>
    createRunpodClient({ apiKey, baseUrl: sim.baseUrl, limiter: new RateLimiter(), logger: capturedLogger().logger, retry: { baseDelayMs: 20, maxDelayMs: 100 } });

  before(async () => {
    sim = await startSimulator({ apiKeys: [KEY], config: { account: { spendRateUsdPerHour: 0.5 }, keys: [{ key: SCOPED, scopes: ['pods:read'] }] } });
  });
  after(async () => {
    await sim.stop();
  });

  it('reads the spend limit; a start over it is spend-limit; a key without a scope is forbidden, once', async () => {
    const c = client(KEY);
    assert.equal((await c.getAccountLimits()).spendRate, 0.5);
    const pod = { name: `acct-${randomUUID().slice(0, 8)}`, image: 'busybox:sim', gpu: { id: 'NVIDIA GeForce RTX 4090', count: 1 } };
    const refused = await c.createPod(pod).then(() => assert.fail('created'), (error: unknown) => error);
    assert.ok(refused instanceof RunpodError);
    assert.equal(refused.kind, 'spend-limit');
    assert.equal(refused.attempts, 1);
    assert.match(refused.message, /spend limit of \$0\.50/);

    const scoped = client(SCOPED);
    assert.deepEqual(await scoped.listPods(), []);
    const denied = await scoped.createPod(pod).then(() => assert.fail('created'), (error: unknown) => error);
    assert.ok(denied instanceof RunpodError);
    assert.equal(denied.kind, 'forbidden');
    assert.equal(denied.attempts, 1, 'a refusal of the key is not retried');
    assert.match(denied.message, /pods:write/);
    const limits = await scoped.getAccountLimits().then(() => assert.fail('read'), (error: unknown) => error);
    assert.ok(limits instanceof RunpodError);
    assert.equal(limits.kind, 'forbidden');
    await c.close();
    await scoped.close();
    await assertNoLeaks(sim.adminUrl);
  });
});

describe('an hour window that runs out', () => {
  it('a create fails fast with rate-limited and the hour\'s Retry-After, sent once; a client that saw the headers sends nothing', async () => {
    const hourly = await startSimulator({ apiKeys: [KEY], config: { rateLimits: { minute: { quota: 100, seconds: 60 }, hour: { quota: 2, seconds: 3600 } } } });
    const make = (limiter: RateLimiter): RunpodClient =>
      createRunpodClient({ apiKey: KEY, baseUrl: hourly.baseUrl, limiter, logger: capturedLogger().logger, retry: { baseDelayMs: 20, maxDelayMs: 100 } });
    const posts = async (): Promise<number[][]> => {
      const stats = (await (await fetch(`${hourly.adminUrl}/stats`)).json()) as { requests: { method: string; status: number; count: number }[] };
      return stats.requests.filter((r) => r.method === 'POST').map((r) => [r.status, r.count]);
    };
    const request = { name: 'hourly', image: 'busybox:sim', gpu: { id: 'NVIDIA A40', count: 1 } };
    try {
      // Another process of the same account spent the hour: this client learns it from the 429.
      const informed = make(new RateLimiter());
      await informed.listPods();
      await informed.listPods();
      const limiter = new RateLimiter();
      const c = make(limiter);
      const started = Date.now();
      const refused = await c.createPod(request).then(() => assert.fail('created'), (error: unknown) => error);
      assert.ok(refused instanceof RunpodError);
      assert.equal(refused.kind, 'rate-limited');
      assert.ok((refused.retryAfterMs ?? 0) > 3_500_000, `retryAfterMs ${refused.retryAfterMs}`);
      assert.ok(Date.now() - started < 10_000, 'not waited out inside the call');
      assert.deepEqual(await posts(), [[429, 1]], 'one create sent, not repeated');
      assert.ok(limiter.snapshot().pausedForMs > 3_500_000, 'every call of the account now waits for the window');
      // The client that saw "hour";r=0 in the headers does not even send it.
      const local = await informed.createPod(request).then(() => assert.fail('created'), (error: unknown) => error);
      assert.ok(local instanceof RunpodError);
      assert.equal(local.kind, 'rate-limited');
      assert.deepEqual(await posts(), [[429, 1]]);
      await c.close();
      await informed.close();
    } finally {
      await hourly.stop();
    }
  });
});
