// Contract tests: the client against the Runpod simulator (real pods), for every call and every error
// class the simulator can produce. Each test deletes what it created and ends with the leak check.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createRunpodClient, type RunpodClient, type RunpodClientOptions } from '../../src/runpod/client.ts';
import { rankGpuTypes } from '../../src/runpod/catalog.ts';
import { RunpodError, type RunpodErrorKind } from '../../src/runpod/errors.ts';
import { RateLimiter } from '../../src/runpod/rate-limiter.ts';
import type { CreatePodRequest, Pod } from '../../src/runpod/schemas.ts';
import { assertNoLeaks, countRequests, injectFault, simPods, simStats } from '../runpod-sim/client.ts';
import { type RunningSimulator, startSimulator } from '../runpod-sim/server.ts';
import { capturedLogger } from './fixture-server.ts';
import { eventually } from '../support/eventually.ts';

const KEY = 'rpa_CONTRACT0TEST0KEY00000000000000000';
const A40 = 'NVIDIA A40';
const RTX4090 = 'NVIDIA GeForce RTX 4090';
const H100 = 'NVIDIA H100 80GB HBM3';
// Something SSH-like on 22 (ssh.direct is reported once the port is assigned, listener or not). The
// args are words for the container's command (Runpod adds no shell), so the program comes first.
const BANNER_ARGS = "socat TCP-LISTEN:22,fork,reuseaddr SYSTEM:'echo SSH-2.0-contract'";

let sim: RunningSimulator;

function client(extra: Partial<RunpodClientOptions> = {}): RunpodClient {
  return createRunpodClient({
    apiKey: KEY,
    baseUrl: sim.baseUrl,
    limiter: new RateLimiter(),
    logger: capturedLogger().logger,
    retry: { baseDelayMs: 20, maxDelayMs: 100 },
    ...extra,
  });
}

function podRequest(gpuId: string, extra: Partial<CreatePodRequest> = {}): CreatePodRequest & { env: { RUNPOD_OPERATOR_RUN: string } } {
  return {
    name: `contract-${randomUUID().slice(0, 8)}`,
    image: 'busybox:sim',
    gpu: { id: gpuId, count: 1 },
    args: 'sleep 600',
    ...extra,
    env: { ...extra.env, RUNPOD_OPERATOR_RUN: randomUUID() },
  };
}

async function failure(p: Promise<unknown>): Promise<RunpodError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof RunpodError, `expected a RunpodError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the call to fail');
}

async function expectKind(p: Promise<unknown>, kind: RunpodErrorKind, status?: number): Promise<RunpodError> {
  const err = await failure(p);
  assert.equal(err.kind, kind, err.message);
  if (status !== undefined) assert.equal(err.status, status);
  return err;
}

/** What an ambiguous create leaves the caller to do: find the pod by its marker. */
async function findByMarker(c: RunpodClient, marker: string): Promise<Pod[]> {
  return (await c.listPods()).filter((p) => p.env.RUNPOD_OPERATOR_RUN === marker);
}

async function clearFaults(): Promise<void> {
  await fetch(`${sim.adminUrl}/faults`, { method: 'DELETE' });
}

before(async () => {
  sim = await startSimulator({ apiKeys: [KEY], config: { rateLimits: { minute: { quota: 1000, seconds: 60 }, hour: { quota: 20_000, seconds: 3600 } } } });
});
after(async () => {
  await sim.stop();
});

void describe('every call', () => {
  void it('reads the catalog and ranks it', async () => {
    const c = client();
    const gpus = await c.listGpuTypes();
    assert.equal(gpus.length, 5);
    const a40 = gpus.find((g) => g.id === A40);
    assert.equal(a40?.secure.pricePerGpuHour, 0.4);
    assert.equal(a40?.memoryGb, 48);
    assert.equal(a40?.inStock, true);
    assert.equal(a40?.community.offered, false);
    assert.deepEqual(
      rankGpuTypes(gpus, { cloud: 'SECURE', gpuCount: 1, minVramGb: 24 }).map((g) => g.id),
      [A40, 'NVIDIA RTX A6000', RTX4090, 'NVIDIA A100 80GB PCIe', H100],
    );
    assert.deepEqual(
      rankGpuTypes(await c.listGpuTypes({ cloud: 'COMMUNITY' }), { cloud: 'COMMUNITY', gpuCount: 1, minVramGb: 40 }).map((g) => g.id),
      ['NVIDIA RTX A6000', 'NVIDIA A100 80GB PCIe'],
    );
    const big = await c.listGpuTypes({ gpuCount: 3 });
    assert.equal(big.find((g) => g.id === H100)?.inStock, false, 'stock is scoped to the GPU count asked about');

    const dcs = await c.listDataCenters();
    assert.deepEqual(dcs.map((d) => d.id), ['EU-RO-1', 'US-TX-3']);
    assert.ok(dcs[0]?.gpuAvailability.some((g) => g.id === A40 && g.inStock));
    await c.close();
  });

  void it('creates, reads, lists, stops, starts and terminates a pod; deletes another', async () => {
    const c = client();
    const req = podRequest(A40, { ports: ['22/tcp'], args: BANNER_ARGS });
    const created = await c.createPod(req);
    assert.equal(created.name, req.name);
    assert.equal(created.status, 'RUNNING');
    assert.equal(created.gpu?.id, A40);
    assert.equal(created.cost, 0.4);
    assert.equal(created.env.RUNPOD_OPERATOR_RUN, req.env.RUNPOD_OPERATOR_RUN);

    const ready = await eventually('ssh.direct', async () => {
      const pod = await c.getPod(created.id);
      return pod.ssh?.direct ? pod : undefined;
    });
    assert.equal(ready.ssh?.direct?.host, '127.0.0.1');
    assert.ok((ready.ssh?.direct?.port ?? 0) > 0);
    assert.equal(ready.runtime?.ports?.find((p) => p.private === 22)?.public, ready.ssh?.direct?.port);

    assert.deepEqual((await c.listPods()).map((p) => p.id), [created.id]);

    const stopped = await c.podAction(created.id, 'stop');
    assert.equal(stopped?.status, 'EXITED');
    assert.equal(stopped?.cost, 0.4, 'cost stays set after a stop');
    assert.equal(stopped?.ssh?.direct ?? null, null);
    assert.equal(stopped?.runtime ?? null, null);
    const started = await c.podAction(created.id, 'start');
    assert.equal(started?.status, 'RUNNING');

    assert.equal(await c.podAction(created.id, 'terminate'), null);
    await expectKind(c.getPod(created.id), 'not-found', 404);

    const other = await c.createPod(podRequest(RTX4090));
    await c.deletePod(other.id);
    await expectKind(c.getPod(other.id), 'not-found', 404);
    assert.deepEqual(await c.listPods(), []);

    const record = (await simPods(sim.adminUrl)).filter((p) => p.id === created.id || p.id === other.id);
    assert.deepEqual(record.map((p) => p.deletedBy), ['account', 'account']);
    await c.close();
    await assertNoLeaks(sim.adminUrl);
  });

  void it('sees a pod RUNNING with ssh.direct and runtime null while it boots slowly', async () => {
    const c = client();
    await injectFault(sim.adminUrl, { fault: 'slow-boot', delayMs: 1500 });
    const pod = await c.createPod(podRequest(A40, { ports: ['22/tcp'], args: BANNER_ARGS }));
    const early = await c.getPod(pod.id);
    assert.equal(early.status, 'RUNNING');
    assert.equal(early.ssh?.direct, null);
    assert.equal(early.runtime, null);
    await eventually('ssh.direct after a slow boot', async () => ((await c.getPod(pod.id)).ssh?.direct ? true : undefined));
    await c.deletePod(pod.id);
    await c.close();
    await assertNoLeaks(sim.adminUrl);
  });
});

void describe('every error class the simulator can produce', () => {
  void it('capacity: no stock left, and an injected no-capacity, answer 400 capacity', async () => {
    const c = client();
    const first = await c.createPod(podRequest(H100, { dataCenterIds: ['EU-RO-1'] }));
    await expectKind(c.createPod(podRequest(H100, { dataCenterIds: ['EU-RO-1'] })), 'capacity', 400);
    await injectFault(sim.adminUrl, { fault: 'no-capacity', gpuTypeId: A40 });
    await expectKind(c.createPod(podRequest(A40)), 'capacity', 400);
    const next = await c.createPod(podRequest(RTX4090));
    await c.deletePod(first.id);
    await c.deletePod(next.id);
    await c.close();
    await assertNoLeaks(sim.adminUrl);
  });

  void it('invalid: a request Runpod rejects (400) and one our schema rejects before sending', async () => {
    const c = client();
    await expectKind(c.createPod(podRequest('NVIDIA GeForce GTX 280')), 'invalid', 400);
    await expectKind(c.createPod(podRequest(A40, { ports: ['70000/tcp'] })), 'invalid', 400);
    const before = countRequests(await simStats(sim.adminUrl), 'POST', '/v2/pods');
    const v1Leftover = { ...podRequest(A40), gpuTypeIds: [A40] } as unknown as CreatePodRequest;
    const err = await expectKind(c.createPod(v1Leftover), 'invalid');
    assert.equal(err.status, undefined);
    assert.equal(countRequests(await simStats(sim.adminUrl), 'POST', '/v2/pods'), before, 'never sent');
    await c.close();
    await assertNoLeaks(sim.adminUrl);
  });

  void it('not-found: unknown pods, a flapping 404 on a live pod, a vanished pod', async () => {
    const c = client();
    await expectKind(c.getPod('doesnotexist00'), 'not-found', 404);
    await expectKind(c.deletePod('doesnotexist00'), 'not-found', 404);
    await expectKind(c.podAction('doesnotexist00', 'terminate'), 'not-found', 404);

    const pod = await c.createPod(podRequest(A40));
    await injectFault(sim.adminUrl, { fault: 'not-found-flap', podId: pod.id, count: 1 });
    await expectKind(c.getPod(pod.id), 'not-found', 404);
    assert.equal((await c.getPod(pod.id)).id, pod.id, 'a 404 is evidence, not proof: the pod is still there');

    await injectFault(sim.adminUrl, { fault: 'vanish', podId: pod.id });
    await expectKind(c.getPod(pod.id), 'not-found', 404);
    assert.deepEqual(await c.listPods(), []);
    await expectKind(c.deletePod(pod.id), 'not-found', 404);
    await c.close();
    await assertNoLeaks(sim.adminUrl);
  });

  void it('rate-limited: a 429 is waited out (even by a create); too many give up', async () => {
    const c = client({ retry: { baseDelayMs: 20, maxDelayMs: 100, rateLimitRetries: 2 } });
    await sim_resetStats();
    await injectFault(sim.adminUrl, { fault: 'rate-limit', method: 'GET', path: '/v2/pods', retryAfterSeconds: 1 });
    assert.deepEqual(await c.listPods(), []);
    await injectFault(sim.adminUrl, { fault: 'rate-limit', method: 'POST', path: '/v2/pods', retryAfterSeconds: 0 });
    const req = podRequest(A40);
    const pod = await c.createPod(req);
    let stats = await simStats(sim.adminUrl);
    assert.equal(countRequests(stats, 'GET', '/v2/pods', 429), 1);
    assert.equal(countRequests(stats, 'POST', '/v2/pods', 429), 1);
    assert.equal(countRequests(stats, 'POST', '/v2/pods', 201), 1);
    assert.equal((await findByMarker(c, req.env.RUNPOD_OPERATOR_RUN)).length, 1, 'the resent create made exactly one pod');

    await injectFault(sim.adminUrl, { fault: 'rate-limit', method: 'GET', path: '/v2/pods/{id}', retryAfterSeconds: 0, count: 3 });
    const err = await expectKind(c.getPod(pod.id), 'rate-limited', 429);
    assert.equal(err.retryAfterMs, 0);
    stats = await simStats(sim.adminUrl);
    assert.equal(countRequests(stats, 'GET', '/v2/pods/{id}', 429), 3);
    await c.deletePod(pod.id);
    await c.close();
    await assertNoLeaks(sim.adminUrl);
  });

  void it('unauthorized: an unknown key is 401, and the key shows nowhere', async () => {
    const fakeKey = 'rpa_FAKEKEY_DO_NOT_LOG_0123456789';
    const { logger, lines } = capturedLogger();
    const c = createRunpodClient({ apiKey: fakeKey, baseUrl: sim.baseUrl, limiter: new RateLimiter(), logger });
    const err = await expectKind(c.listPods(), 'unauthorized', 401);
    assert.equal(err.detail, 'invalid bearer token');
    for (const text of [err.message, String(err), JSON.stringify(err), err.stack ?? '', lines.join('\n')]) {
      assert.ok(!text.includes('FAKEKEY_DO_NOT_LOG'), text);
    }
    await c.close();
  });

  void it('forbidden: a pod-scoped key may not list; its own pod it may read and delete', async () => {
    const c = client();
    const pod = await c.createPod(podRequest(A40));
    const other = await c.createPod(podRequest(A40));
    const podKey = (await simPods(sim.adminUrl)).find((p) => p.id === pod.id)?.podApiKey;
    assert.ok(podKey);
    const asPod = createRunpodClient({ apiKey: podKey, baseUrl: sim.baseUrl, limiter: new RateLimiter(), logger: capturedLogger().logger });
    await expectKind(asPod.listPods(), 'forbidden', 403);
    await expectKind(asPod.deletePod(other.id), 'forbidden', 403);
    // A 403 on a create is read as "no access to this GPU pool" (v2's retry table): capacity.
    await expectKind(asPod.createPod(podRequest(A40)), 'capacity', 403);
    assert.equal((await asPod.getPod(pod.id)).id, pod.id);
    await asPod.deletePod(pod.id);
    assert.equal((await simPods(sim.adminUrl)).find((p) => p.id === pod.id)?.deletedBy, 'pod');
    await c.deletePod(other.id);
    await asPod.close();
    await c.close();
    await assertNoLeaks(sim.adminUrl);
  });

  void it('conflict: an action the pod status does not allow is 409', async () => {
    const c = client();
    const pod = await c.createPod(podRequest(A40));
    await expectKind(c.podAction(pod.id, 'start'), 'conflict', 409);
    await c.deletePod(pod.id);
    await c.close();
    await assertNoLeaks(sim.adminUrl);
  });

  void it('transient: reads and deletes retry through 5xx; reads give up after their attempts', async () => {
    const c = client({ retry: { baseDelayMs: 10, maxDelayMs: 40, readAttempts: 3 } });
    const pod = await c.createPod(podRequest(A40));
    await sim_resetStats();
    await injectFault(sim.adminUrl, { fault: 'http-5xx', method: 'GET', path: '/v2/pods/{id}', count: 2, status: 503 });
    assert.equal((await c.getPod(pod.id)).id, pod.id);
    await injectFault(sim.adminUrl, { fault: 'http-5xx', method: 'GET', path: '/v2/pods', count: 3 });
    const err = await expectKind(c.listPods(), 'transient', 500);
    assert.equal(err.attempts, 3);
    await injectFault(sim.adminUrl, { fault: 'http-5xx', method: 'DELETE', path: '/v2/pods/{id}', count: 1, status: 502 });
    await c.deletePod(pod.id);
    const stats = await simStats(sim.adminUrl);
    assert.equal(countRequests(stats, 'GET', '/v2/pods/{id}'), 3);
    assert.equal(countRequests(stats, 'GET', '/v2/pods'), 3);
    assert.deepEqual([countRequests(stats, 'DELETE', '/v2/pods/{id}', 502), countRequests(stats, 'DELETE', '/v2/pods/{id}', 204)], [1, 1]);
    await c.close();
    await assertNoLeaks(sim.adminUrl);
  });

  void it('ambiguous: a create answered 5xx, or not at all, is never resent; the pod is found by its marker', async () => {
    const c = client({ timeouts: { createMs: 1500 } });
    await sim_resetStats();

    await injectFault(sim.adminUrl, { fault: 'create-ambiguous' });
    const first = podRequest(A40);
    await expectKind(c.createPod(first), 'ambiguous', 500);

    await injectFault(sim.adminUrl, { fault: 'create-timeout' });
    const second = podRequest(A40);
    const timedOut = await expectKind(c.createPod(second), 'ambiguous');
    assert.equal(timedOut.status, undefined);

    await injectFault(sim.adminUrl, { fault: 'http-5xx', method: 'POST', path: '/v2/pods', status: 503 });
    const third = podRequest(A40);
    await expectKind(c.createPod(third), 'ambiguous', 503);

    const stats = await simStats(sim.adminUrl);
    assert.equal(countRequests(stats, 'POST', '/v2/pods'), 3, 'each create was sent exactly once');
    const found = [...(await findByMarker(c, first.env.RUNPOD_OPERATOR_RUN)), ...(await findByMarker(c, second.env.RUNPOD_OPERATOR_RUN))];
    assert.deepEqual(found.map((p) => p.name), [first.name, second.name], 'both ambiguous creates did make a pod');
    assert.deepEqual(await findByMarker(c, third.env.RUNPOD_OPERATOR_RUN), [], 'this one did not: only a lookup can tell');
    for (const pod of found) await c.deletePod(pod.id);
    await c.close();
    await assertNoLeaks(sim.adminUrl);
  });
});

void describe('the account budget against a real quota', () => {
  let small: RunningSimulator;
  before(async () => {
    small = await startSimulator({ apiKeys: [KEY], config: { rateLimits: { minute: { quota: 5, seconds: 2 }, hour: { quota: 3000, seconds: 3600 } } } });
  });
  after(async () => {
    await small.stop();
  });

  void it('shares one limiter between callers and paces them by the headers: no 429 at all', async () => {
    const limiter = new RateLimiter();
    const observer = createRunpodClient({ apiKey: KEY, baseUrl: small.baseUrl, limiter, logger: capturedLogger().logger });
    const reconciler = createRunpodClient({ apiKey: KEY, baseUrl: small.baseUrl, limiter, logger: capturedLogger().logger });
    const callers = [observer, reconciler];
    const calls: Promise<unknown>[] = Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? observer.listPods() : reconciler.listDataCenters()));
    await Promise.all(calls);
    const stats = await simStats(small.adminUrl);
    assert.equal(stats.requests.filter((r) => r.status === 429).length, 0, JSON.stringify(stats.requests));
    assert.equal(stats.total, 12);
    for (const c of callers) await c.close();
  });
});

async function sim_resetStats(): Promise<void> {
  await clearFaults();
  await fetch(`${sim.adminUrl}/reset-stats`, { method: 'POST' });
}
