// The client and the simulator judged by an OpenAPI validator none of us wrote: Prism, in proxy mode
// between them, reading openapi-v2.json (test/support/prism-judge.ts). Every call the client makes and
// every error class it must read goes through it; any request or response Prism reports as a
// violation fails the test. Deliberate violations (the canaries) prove Prism does judge.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { after, afterEach, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createRunpodClient, type RunpodClient } from '../../src/runpod/client.ts';
import { RunpodError, type RunpodErrorKind } from '../../src/runpod/errors.ts';
import { RateLimiter } from '../../src/runpod/rate-limiter.ts';
import type { CreatePodRequest } from '../../src/runpod/schemas.ts';
import { assertNoLeaks, injectFault, simPods } from '../runpod-sim/client.ts';
import { type RunningSimulator, startSimulator } from '../runpod-sim/server.ts';
import { CANARY_HEADER, CANARY_POD_ID, type PrismJudge, SPEC_PATH, startPrismJudge, violationsOf } from '../support/prism-judge.ts';
import { capturedLogger } from './fixture-server.ts';
import { eventually } from '../support/eventually.ts';

const KEY = 'rpa_JUDGED0CONTRACT0KEY000000000000000';
const A40 = 'NVIDIA A40';
const H100 = 'NVIDIA H100 80GB HBM3';
// Something on port 22 that speaks first (no `exec`: a program as the first word suits both `sh -c`
// and an argv split of `args`).
const BANNER_ARGS = "socat TCP-LISTEN:22,fork,reuseaddr SYSTEM:'echo SSH-2.0-judged'";
// CI has a copy of shared/ beside the repo; the test reads the vendored copy and says when they part.
const SHARED_SPEC = fileURLToPath(new URL('../../../shared/runpod/openapi-v2.json', import.meta.url));

let judge: PrismJudge;
let sim: RunningSimulator;

const client = (apiKey = KEY): RunpodClient => createRunpodClient({
  apiKey, baseUrl: judge.baseUrl, limiter: new RateLimiter(), logger: capturedLogger().logger,
  retry: { baseDelayMs: 20, maxDelayMs: 100, rateLimitRetries: 2 },
});

const podRequest = (gpuId: string, extra: Partial<CreatePodRequest> = {}): CreatePodRequest => ({
  name: `judged-${randomUUID().slice(0, 8)}`, image: 'busybox:sim', gpu: { id: gpuId, count: 1 }, args: 'sleep 600',
  env: { RUNPOD_OPERATOR_RUN: randomUUID() }, ...extra,
});

async function expectKind(p: Promise<unknown>, kind: RunpodErrorKind, status: number): Promise<RunpodError> {
  const err = await p.then(() => assert.fail(`expected ${kind}`), (e: unknown) => e);
  assert.ok(err instanceof RunpodError, String(err));
  assert.equal(err.kind, kind, err.message);
  assert.equal(err.status, status);
  return err;
}

/** A raw request through the judge, marked as a deliberate violation. */
async function canary(name: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${judge.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, [CANARY_HEADER]: name, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

const canaryExchange = (name: string) => {
  const found = judge.exchanges.find((e) => e.canary === name);
  assert.ok(found, `the canary ${name} went through the judge`);
  return found;
};

before(async () => {
  if (existsSync(SHARED_SPEC)) {
    assert.equal(readFileSync(SPEC_PATH, 'utf8'), readFileSync(SHARED_SPEC, 'utf8'), `${SPEC_PATH} is no longer a copy of ${SHARED_SPEC}: copy it again`);
  }
  judge = await startPrismJudge();
  sim = await startSimulator({ apiKeys: [KEY], config: { rateLimits: { minute: { quota: 1000, seconds: 60 }, hour: { quota: 20_000, seconds: 3600 } }, networkVolumes: [{ id: 'nv-judged', name: 'judged', size: 10, dataCenter: 'EU-RO-1' }] } });
  judge.judge(sim.baseUrl);
});
afterEach(async () => {
  await fetch(`${sim.adminUrl}/faults`, { method: 'DELETE' });
});
after(async () => {
  await sim?.stop();
  await judge?.stop();
});

void describe('the judge itself', () => {
  void it('reports a response that breaks the Pod schema, a create with a field the spec lacks, an answer it made up', async () => {
    const broken = await canary('broken-pod', 'GET', `/pods/${CANARY_POD_ID}`);
    assert.equal(broken.status, 200);
    const pod = canaryExchange('broken-pod');
    assert.ok(pod.violations.some((v) => v.location[0] === 'response' && v.code === 'required'), JSON.stringify(pod.violations));
    assert.ok(pod.violations.some((v) => v.location.join('.') === 'response.body.status' && v.code === 'enum'), JSON.stringify(pod.violations));

    // A v1 leftover: the spec's unevaluatedProperties:false (judged only once Prism knows the
    // document is JSON Schema 2020-12). The simulator's own 422 answer is judged too.
    const v1 = await canary('v1-field', 'POST', '/pods', { ...podRequest(A40), gpuTypeIds: [A40] });
    assert.equal(v1.status, 422);
    const exchange = canaryExchange('v1-field');
    assert.deepEqual(exchange.violations.map((v) => [v.location.join('.'), v.code]), [['request.body', 'unevaluatedProperties']], 'only the request is at fault; the 422 answer fits the spec');

    // The simulator answers PATCH 501 (not implemented); Prism then serves a mock of its own instead.
    await canary('remock', 'PATCH', '/pods/doesnotexist00', { name: 'renamed' });
    assert.ok(canaryExchange('remock').violations.some((v) => v.message === 'answered by Prism itself, not by the simulator'), JSON.stringify(canaryExchange('remock')));
    assert.deepEqual(judge.violations(), [], 'canaries are kept apart from the traffic under judgement');
  });

  void it('reports a path the spec lacks; a declared off-spec call is excused that alone, and only for its method', async () => {
    await canary('off-spec', 'GET', '/account/limits');
    await canary('off-spec-method', 'DELETE', '/pods');
    const { canary: _, ...offSpecCall } = canaryExchange('off-spec');
    const { canary: __, ...wrongMethod } = canaryExchange('off-spec-method');
    const declared = [{ method: 'GET', path: '/v2/account/limits', source: 'API-NOTES.md, 2026-12 addendum' }];
    // Whatever the simulator answers (404 today; 200 once it serves the spend limit), Prism has no route.
    assert.deepEqual(violationsOf([offSpecCall], []), [`GET /v2/account/limits -> ${offSpecCall.status}: Warning request: Selected route not found`]);
    assert.deepEqual(violationsOf([offSpecCall], declared), []);
    assert.deepEqual(violationsOf([{ ...offSpecCall, method: 'POST' }, wrongMethod], declared).length, 2);
    const badAnswer = { ...offSpecCall, violations: [...offSpecCall.violations, { location: ['response', 'body'], severity: 'Error', message: 'x' }] };
    assert.deepEqual(violationsOf([badAnswer], declared), [`GET /v2/account/limits -> ${offSpecCall.status}: Error response.body: x`]);
  });
});

void describe('every call of the client, judged', () => {
  void it('catalog; create, get, list, stop, start, restart, terminate; create and delete', async () => {
    const c = client();
    assert.ok((await c.listGpuTypes()).length > 0);
    assert.ok((await c.listGpuTypes({ cloud: 'COMMUNITY', gpuCount: 2, minCudaVersion: '12.8' })).length > 0);
    assert.ok((await c.listDataCenters()).length > 0);

    const created = await c.createPod(podRequest(A40, { ports: ['22/tcp'], args: BANNER_ARGS }));
    await eventually('ssh.direct', async () => ((await c.getPod(created.id)).ssh?.direct ? true : undefined));
    assert.deepEqual((await c.listPods()).map((p) => p.id), [created.id]);
    assert.equal((await c.podAction(created.id, 'stop'))?.status, 'EXITED');
    assert.equal((await c.getPod(created.id)).status, 'EXITED');
    assert.equal((await c.podAction(created.id, 'start'))?.status, 'RUNNING');
    assert.equal((await c.podAction(created.id, 'restart'))?.status, 'RUNNING');
    assert.equal(await c.podAction(created.id, 'terminate'), null);

    const other = await c.createPod(podRequest(A40));
    await c.deletePod(other.id);
    assert.deepEqual(await c.listPods(), []);
    await c.close();
    judge.assertNoViolations();
    await assertNoLeaks(sim.adminUrl);
  });

  // (Not the pod log stream: Prism's proxy holds an answer until its body ends, and that one never does;
  // test/runpod/pod-logs.test.ts reads it from the simulator directly.)
  void it('a network volume, registry credentials', async () => {
    const c = client();
    const volume = await c.getNetworkVolume('nv-judged');
    assert.equal(volume.dataCenter, 'EU-RO-1');
    const registry = await c.createRegistry({ name: 'judged', username: 'ci', password: 'judged-PASSWORD-0123456789' });
    assert.ok((await c.listRegistries()).some((r) => r.id === registry.id));
    await c.deleteRegistry(registry.id);
    await c.close();
    judge.assertNoViolations();
    await assertNoLeaks(sim.adminUrl);
  });
});

void describe('every error the client must read, judged', () => {
  void it('capacity 400 (stock gone, and injected), 404 on get/delete/action, 409 on a bad action', async () => {
    const c = client();
    const first = await c.createPod(podRequest(H100, { dataCenterIds: ['EU-RO-1'] }));
    await expectKind(c.createPod(podRequest(H100, { dataCenterIds: ['EU-RO-1'] })), 'capacity', 400);
    await injectFault(sim.adminUrl, { fault: 'no-capacity', gpuTypeId: A40 });
    await expectKind(c.createPod(podRequest(A40)), 'capacity', 400);
    await expectKind(c.createPod(podRequest('NVIDIA GeForce GTX 280')), 'invalid', 400);

    await expectKind(c.getPod('doesnotexist00'), 'not-found', 404);
    await expectKind(c.deletePod('doesnotexist00'), 'not-found', 404);
    await expectKind(c.podAction('doesnotexist00', 'terminate'), 'not-found', 404);
    await expectKind(c.podAction(first.id, 'start'), 'conflict', 409);
    await c.deletePod(first.id);
    await c.close();
    judge.assertNoViolations();
    await assertNoLeaks(sim.adminUrl);
  });

  void it('429 with Retry-After, waited out; too many give up; a 5xx retried', async () => {
    const c = client();
    await injectFault(sim.adminUrl, { fault: 'rate-limit', method: 'GET', path: '/v2/pods', retryAfterSeconds: 1 });
    assert.deepEqual(await c.listPods(), []);
    await injectFault(sim.adminUrl, { fault: 'rate-limit', method: 'POST', path: '/v2/pods', retryAfterSeconds: 0 });
    const pod = await c.createPod(podRequest(A40));
    await injectFault(sim.adminUrl, { fault: 'rate-limit', method: 'GET', path: '/v2/pods/{id}', retryAfterSeconds: 0, count: 3 });
    await expectKind(c.getPod(pod.id), 'rate-limited', 429);
    await injectFault(sim.adminUrl, { fault: 'http-5xx', method: 'GET', path: '/v2/pods/{id}', count: 1, status: 503 });
    assert.equal((await c.getPod(pod.id)).id, pod.id);
    await c.deletePod(pod.id);
    const limited = judge.exchanges.filter((e) => e.status === 429);
    assert.equal(limited.length, 1 + 1 + 3, 'every 429 went through the judge');
    await c.close();
    judge.assertNoViolations();
    await assertNoLeaks(sim.adminUrl);
  });

  void it('a real quota running out: 429 with RateLimit headers and Retry-After', async () => {
    const small = await startSimulator({ apiKeys: [KEY], config: { rateLimits: { minute: { quota: 3, seconds: 2 }, hour: { quota: 3000, seconds: 3600 } } } });
    judge.judge(small.baseUrl);
    try {
      const before = judge.exchanges.length;
      // Four raw calls in a row: the fourth is over the minute quota (the client would pace itself).
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await fetch(`${judge.baseUrl}/pods`, { headers: { authorization: `Bearer ${KEY}` } })).status);
      assert.deepEqual(statuses, [200, 200, 200, 429]);
      assert.equal(judge.exchanges.length - before, 4);
      judge.assertNoViolations();
    } finally {
      judge.judge(sim.baseUrl);
      await small.stop();
    }
  });

  void it('401 for an unknown key, 403 for a pod key that lists or deletes another pod', async () => {
    const c = client();
    const pod = await c.createPod(podRequest(A40));
    const other = await c.createPod(podRequest(A40));
    await expectKind(client('rpa_UNKNOWN_KEY_000000000000').listPods(), 'unauthorized', 401);
    const podKey = (await simPods(sim.adminUrl)).find((p) => p.id === pod.id)?.podApiKey;
    assert.ok(podKey);
    const asPod = client(podKey);
    await expectKind(asPod.listPods(), 'forbidden', 403);
    await expectKind(asPod.deletePod(other.id), 'forbidden', 403);
    assert.equal((await asPod.getPod(pod.id)).id, pod.id);
    await asPod.deletePod(pod.id);
    await c.deletePod(other.id);
    await asPod.close();
    await c.close();
    judge.assertNoViolations();
    await assertNoLeaks(sim.adminUrl);
  });
});
