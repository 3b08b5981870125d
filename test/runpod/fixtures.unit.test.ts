// Fixture tests: the bodies Runpod is recorded to send (API-NOTES.md §§1.6, 3) through the classifier,
// the parsers and, via a replaying server on 127.0.0.1, the whole transport.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { inspect } from 'node:util';
import { createRunpodClient, type RunpodClientOptions } from '../../src/runpod/client.ts';
import { type RunpodErrorKind, RunpodError, classifyResponse, classifyTransport, isRunpodError } from '../../src/runpod/errors.ts';
import { RateLimiter } from '../../src/runpod/rate-limiter.ts';
import { systemClock, type Clock } from '../../src/runpod/clock.ts';
import { redactText, registerApiKey } from '../../src/runpod/redact.ts';
import { podSchema } from '../../src/runpod/schemas.ts';
import { validateBaseUrl } from '../../src/runpod/http.ts';
import { type FixtureServer, capturedLogger, startFixtureServer } from './fixture-server.ts';

// --- Bodies measured against the live v2 service (API-NOTES §3), verbatim. ---
const CAPACITY_400 = {
  detail: 'There are no longer any instances available with the requested specifications. Please refresh and try again.',
  status: 400,
  title: 'Bad Request',
};
const VALIDATION_422 = {
  detail: 'Request validation failed.',
  errors: ["$.action: value must be one of 'start', 'stop', 'restart', 'terminate'"],
  status: 422,
  title: 'Unprocessable Entity',
};
const RATE_LIMITED_429 = { title: 'Too Many Requests', status: 429, detail: 'rate limit exceeded for the minute window' };
const RATE_LIMIT_HEADERS = {
  'Retry-After': '12',
  RateLimit: '"minute";r=0;t=12, "hour";r=2800;t=1812, "day";r=49500;t=45012',
  'RateLimit-Policy': '"minute";q=60;w=60, "hour";q=3000;w=3600, "day";q=50000;w=86400',
};
const UNAUTHORIZED_401 = { title: 'Unauthorized', status: 401, detail: 'missing bearer token' };
const FORBIDDEN_403 = { title: 'Forbidden', status: 403, detail: 'access denied' };
const NOT_FOUND_404 = { title: 'Not Found', status: 404, detail: 'resource not found' };
// Cloudflare in front of Runpod, for a client without its own User-Agent (API-NOTES §1.1, pitfall 12).
const CLOUDFLARE_403 = 'error code: 1010';
// v1-era bodies (API-NOTES §1.6); a v2 edge still in front of old handlers may send them.
const V1_NOT_FOUND = { error: 'pod not found', status: 404 };
const V1_SOMETHING_WRONG = { error: 'Something went wrong.' };
// No 402 body was captured; the v2 problem shape with v1's measured balance text stands in.
const BALANCE_402 = {
  title: 'Payment Required',
  status: 402,
  detail: 'Your account balance is too low to rent a pod. Please add funds to your account.',
};

// --- Pods. The notes record a live v2 pod's behaviour (RUNNING at once with runtime and ssh.direct
// null; cost still 0.72 after stop) and a live v1 body; these are that pod in v2 field names. ---
const LIVE_POD_BOOTING = {
  id: '5xpma5eg46tqjq',
  name: 'imgtbx-v2-probe',
  status: 'RUNNING',
  actions: ['stop', 'restart', 'terminate'],
  image: 'runpod/pytorch:1.0.7-cu1281-torch291-ubuntu2204',
  args: '',
  disk: 30,
  mounts: { network: [{ volumeId: 'grvtso8ftn', path: '/workspace' }] },
  ports: ['22/tcp'],
  env: { PUBLIC_KEY: 'ssh-ed25519 SCRUBBED' },
  registry: null,
  cloud: 'SECURE',
  dataCenterId: 'EU-RO-1',
  cudaVersion: null,
  gpu: { id: 'NVIDIA RTX PRO 4500 Blackwell', count: 1 },
  ssh: { proxy: { host: 'ssh.runpod.io', port: 22, username: '5xpma5eg46tqjq-64411eb2', command: 'ssh 5xpma5eg46tqjq-64411eb2@ssh.runpod.io' }, direct: null },
  template: null,
  cost: 0.72,
  locked: false,
  globalNetworking: { enabled: false },
  runtime: null,
  createdAt: '2026-08-20T06:16:19.436Z',
  startedAt: '2026-08-20T06:16:19.43Z',
};
const LIVE_POD_READY = {
  ...LIVE_POD_BOOTING,
  cudaVersion: '12.8',
  ssh: { ...LIVE_POD_BOOTING.ssh, direct: { host: '213.173.104.74', port: 35558, username: 'root', command: 'ssh root@213.173.104.74 -p 35558' } },
  runtime: { uptime: 42, gpus: [{ util: 0, memoryUtil: 0 }], cpu: { util: 3 }, memory: { util: 5 }, ports: [{ private: 22, public: 35558, type: 'tcp', ip: '213.173.104.74' }] },
};
const STOPPED_POD = { ...LIVE_POD_BOOTING, status: 'EXITED', actions: ['start', 'terminate'], ssh: { proxy: null, direct: null }, runtime: null, cost: 0.72 };

const classify = (operation: Parameters<typeof classifyResponse>[0]['operation'], status: number, body: unknown): RunpodError =>
  classifyResponse({ operation, status, body });

void describe('classification of recorded bodies', () => {
  const cases: [string, Parameters<typeof classify>[0], number, unknown, RunpodErrorKind][] = [
    ['capacity 400 on create', 'createPod', 400, CAPACITY_400, 'capacity'],
    ['422 validation', 'podAction', 422, VALIDATION_422, 'invalid'],
    ['422 on create', 'createPod', 422, VALIDATION_422, 'invalid'],
    ['429', 'listPods', 429, RATE_LIMITED_429, 'rate-limited'],
    ['429 on create', 'createPod', 429, RATE_LIMITED_429, 'rate-limited'],
    ['401', 'getPod', 401, UNAUTHORIZED_401, 'unauthorized'],
    ['403 on a read', 'listPods', 403, FORBIDDEN_403, 'forbidden'],
    ['403 on create (no access to the pool)', 'createPod', 403, FORBIDDEN_403, 'capacity'],
    ['Cloudflare 403 on create', 'createPod', 403, CLOUDFLARE_403, 'forbidden'],
    ['404', 'getPod', 404, NOT_FOUND_404, 'not-found'],
    ['404 on delete', 'deletePod', 404, NOT_FOUND_404, 'not-found'],
    ['v1 404', 'getPod', 404, V1_NOT_FOUND, 'not-found'],
    ['HTML 404 (not Runpod)', 'getPod', 404, '<html><body>Not Found</body></html>', 'unexpected'],
    ['empty 404 (not Runpod)', 'deletePod', 404, '', 'unexpected'],
    ['402', 'createPod', 402, BALANCE_402, 'balance'],
    ['409', 'podAction', 409, { title: 'Conflict', status: 409, detail: 'invalid action for pod status' }, 'conflict'],
    ['500 on create', 'createPod', 500, V1_SOMETHING_WRONG, 'ambiguous'],
    ['502 HTML on create', 'createPod', 502, '<html>Bad gateway</html>', 'ambiguous'],
    ['500 on a read', 'getPod', 500, V1_SOMETHING_WRONG, 'transient'],
    ['503 on delete', 'deletePod', 503, '', 'transient'],
    ['other 400', 'createPod', 400, { title: 'Bad Request', status: 400, detail: 'mounts: persistent and network are mutually exclusive' }, 'invalid'],
    ['410 Gone', 'listPods', 410, { title: 'Gone', status: 410, detail: 'gone' }, 'invalid'],
    ['302', 'getPod', 302, '', 'unexpected'],
  ];
  for (const [name, operation, status, body, kind] of cases) {
    void it(`${name} -> ${kind}`, () => {
      const err = classify(operation, status, body);
      assert.ok(err instanceof RunpodError);
      assert.ok(err instanceof Error);
      assert.equal(err.kind, kind);
      assert.equal(err.status, status);
      assert.equal(err.operation, operation);
    });
  }

  void it('keeps Runpod texts in the detail, validation errors included', () => {
    assert.equal(classify('createPod', 400, CAPACITY_400).detail, CAPACITY_400.detail);
    assert.equal(classify('podAction', 422, VALIDATION_422).detail, `Request validation failed.; ${VALIDATION_422.errors[0]}`);
    assert.equal(classify('getPod', 404, V1_NOT_FOUND).detail, 'pod not found');
    assert.match(classify('getPod', 404, NOT_FOUND_404).message, /^Runpod getPod failed \(not-found, HTTP 404\): resource not found$/);
  });

  void it('recognises the other capacity wordings Runpod has used', () => {
    for (const detail of [
      'There are no instances currently available',
      'There are no longer any instances available with the request specifications. Please try again later.',
      'There are not enough free GPUs on the host machine to start this pod.',
    ]) {
      assert.equal(classify('createPod', 400, { title: 'Bad Request', status: 400, detail }).kind, 'capacity', detail);
    }
  });

  void it('classifies transport failures by whether a pod may exist', () => {
    const reset = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    assert.equal(classifyTransport({ operation: 'createPod', error: reset, timedOut: false }).kind, 'ambiguous');
    assert.equal(classifyTransport({ operation: 'createPod', error: new Error('timeout'), timedOut: true, timeoutMs: 60_000 }).kind, 'ambiguous');
    assert.equal(classifyTransport({ operation: 'createPod', error: refused, timedOut: false }).kind, 'transient', 'a refused connection sent nothing');
    assert.equal(classifyTransport({ operation: 'getPod', error: reset, timedOut: false }).kind, 'transient');
    assert.equal(classifyTransport({ operation: 'deletePod', error: new Error('timeout'), timedOut: true }).kind, 'transient');
  });
});

void describe('parsing recorded pods', () => {
  void it('reads a live pod that is RUNNING with runtime and ssh.direct still null', () => {
    const pod = podSchema.parse(LIVE_POD_BOOTING);
    assert.equal(pod.status, 'RUNNING');
    assert.equal(pod.runtime, null);
    assert.equal(pod.ssh?.direct, null);
    assert.equal(pod.ssh?.proxy?.host, 'ssh.runpod.io');
    assert.equal(pod.cudaVersion, null);
    assert.equal(pod.gpu?.id, 'NVIDIA RTX PRO 4500 Blackwell');
    assert.equal(pod.gpu?.count, 1);
    assert.deepEqual(pod.env, { PUBLIC_KEY: 'ssh-ed25519 SCRUBBED' });
    assert.equal(pod.createdAt, '2026-08-20T06:16:19.436Z');
  });

  void it('reads the same pod once ssh.direct and runtime are set', () => {
    const pod = podSchema.parse(LIVE_POD_READY);
    assert.deepEqual({ host: pod.ssh?.direct?.host, port: pod.ssh?.direct?.port }, { host: '213.173.104.74', port: 35558 });
    assert.equal(pod.runtime?.ports?.[0]?.public, 35558);
  });

  void it('reads a stopped pod whose cost is still set', () => {
    const pod = podSchema.parse(STOPPED_POD);
    assert.equal(pod.status, 'EXITED');
    assert.equal(pod.cost, 0.72);
    assert.deepEqual(pod.actions, ['start', 'terminate']);
  });

  void it('tolerates what the spec does not promise: unknown status, string numbers, missing and extra fields', () => {
    const pod = podSchema.parse({ id: 'abc123', status: 'PAUSED', cost: '0.44', gpu: { id: 'NVIDIA A40', count: '2' }, somethingNew: { x: 1 } });
    assert.equal(pod.status, 'UNKNOWN');
    assert.equal(pod.cost, 0.44);
    assert.equal(pod.gpu?.count, 2);
    assert.equal(pod.name, '');
    assert.deepEqual(pod.env, {});
    assert.deepEqual((pod as Record<string, unknown>).somethingNew, { x: 1 });
    assert.throws(() => podSchema.parse({ name: 'no id' }));
  });
});

void describe('base URL', () => {
  void it('allows https anywhere and http only to loopback', () => {
    assert.equal(validateBaseUrl('https://api.runpod.io/v2/'), 'https://api.runpod.io/v2');
    for (const ok of ['http://127.0.0.1:8080/v2', 'http://127.9.8.7/v2', 'http://localhost:1/v2', 'http://[::1]:9/v2']) assert.ok(validateBaseUrl(ok));
    for (const bad of ['http://api.runpod.io/v2', 'http://10.0.0.1/v2', 'http://127.0.0.1.nip.io/v2', 'ftp://127.0.0.1/v2', 'https://u:p@api.runpod.io/v2', 'not a url']) {
      assert.throws(() => validateBaseUrl(bad), /Runpod base URL/, bad);
    }
  });

  void it('refuses a key that cannot be a header value, without quoting it', () => {
    assert.throws(
      () => createRunpodClient({ apiKey: 'rpa_BROKEN\nKEY_0123456789', baseUrl: 'http://127.0.0.1:9/v2', limiter: new RateLimiter() }),
      (err: unknown) => err instanceof Error && !err.message.includes('BROKEN'),
    );
  });
});

void describe('transport against recorded answers', () => {
  let server: FixtureServer;
  const options = (extra: Partial<RunpodClientOptions> = {}): RunpodClientOptions => ({
    apiKey: 'rpa_FIXTURE_KEY_000000000000000000',
    baseUrl: server.baseUrl,
    limiter: new RateLimiter(),
    logger: capturedLogger().logger,
    retry: { baseDelayMs: 5, maxDelayMs: 20 },
    ...extra,
  });
  const kindOf = async (p: Promise<unknown>): Promise<RunpodError> => {
    try {
      await p;
    } catch (err) {
      assert.ok(err instanceof RunpodError, `not a RunpodError: ${String(err)}`);
      return err;
    }
    assert.fail('expected a RunpodError');
  };

  before(async () => {
    server = await startFixtureServer();
  });
  after(async () => {
    await server.stop();
  });

  void it('sends the key, a project User-Agent and JSON, and parses a booting pod', async () => {
    const client = createRunpodClient(options());
    server.received.length = 0;
    server.script.push({ status: 200, body: LIVE_POD_BOOTING });
    const pod = await client.getPod('5xpma5eg46tqjq');
    assert.equal(pod.ssh?.direct, null);
    const req = server.received[0];
    assert.equal(req?.method, 'GET');
    assert.equal(req?.url, '/v2/pods/5xpma5eg46tqjq');
    assert.equal(req?.headers.authorization, 'Bearer rpa_FIXTURE_KEY_000000000000000000');
    assert.match(String(req?.headers['user-agent']), /^runpod-operator\/\d+\.\d+\.\d+/);
    await client.close();
  });

  void it('capacity 400 on create: one request, kind capacity', async () => {
    const client = createRunpodClient(options());
    server.received.length = 0;
    server.script.push({ status: 400, body: CAPACITY_400 });
    const err = await kindOf(client.createPod({ name: 'r-1', image: 'busybox', gpu: { id: 'NVIDIA A40' } }));
    assert.equal(err.kind, 'capacity');
    assert.equal(server.received.length, 1);
    assert.deepEqual(JSON.parse(server.received[0]?.body ?? ''), { name: 'r-1', image: 'busybox', gpu: { id: 'NVIDIA A40' } });
    await client.close();
  });

  void it('429 with the recorded headers: waits Retry-After, then resends even a create', async () => {
    // The observer (metrics) sees both exchanges by route and status, and the wait as a Retry-After one.
    const requests: string[] = [];
    const waits: { cause: string; seconds: number }[] = [];
    const client = createRunpodClient({
      ...options(),
      observer: { request: (endpoint, status) => void requests.push(`${endpoint} ${status}`), rateLimitWait: (cause, seconds) => void waits.push({ cause, seconds }) },
    });
    server.received.length = 0;
    server.script.push({
      status: 429,
      body: RATE_LIMITED_429,
      // The recorded headers, with the wait shortened to 1 s (Retry-After and the minute window agree).
      headers: { ...RATE_LIMIT_HEADERS, 'Retry-After': '1', RateLimit: '"minute";r=0;t=1, "hour";r=2800;t=1812' },
    });
    server.script.push({ status: 201, body: LIVE_POD_BOOTING });
    const pod = await client.createPod({ name: 'r-1', image: 'busybox', gpu: { id: 'NVIDIA A40' } });
    assert.equal(pod.id, '5xpma5eg46tqjq');
    assert.equal(server.received.length, 2, 'the refused create was sent once more');
    assert.deepEqual(requests, ['POST /pods 429', 'POST /pods 201']);
    assert.equal(waits.length, 1);
    assert.equal(waits[0]?.cause, 'retry_after');
    assert.ok((waits[0]?.seconds ?? 0) > 0.5, `waited ${waits[0]?.seconds} s for a 1 s Retry-After`);
    await client.close();
  });

  void it('a request granted at once is no rate-limit wait, however late a busy process resumes after the grant', async () => {
    // Seen on a loaded machine: the 10 ms a descheduled process took to resume was counted as a budget wait.
    let t = Date.now();
    const lateClock: Clock = { ...systemClock, now: () => (t += 25) };
    const waits: string[] = [];
    const client = createRunpodClient({ ...options(), clock: lateClock, observer: { request: () => undefined, rateLimitWait: (cause) => void waits.push(cause) } });
    server.script.push({ status: 201, body: LIVE_POD_BOOTING });
    await client.createPod({ name: 'r-1', image: 'busybox', gpu: { id: 'NVIDIA A40' } });
    assert.deepEqual(waits, []);
    await client.close();
  });

  void it('429 whose Retry-After is too long for the caller: rate-limited with retryAfterMs, and the account pauses', async () => {
    const limiter = new RateLimiter();
    const client = createRunpodClient(options({ limiter, retry: { maxRateLimitWaitMs: 5000 } }));
    server.received.length = 0;
    server.script.push({ status: 429, body: RATE_LIMITED_429, headers: RATE_LIMIT_HEADERS });
    const err = await kindOf(client.listPods());
    assert.equal(err.kind, 'rate-limited');
    assert.equal(err.retryAfterMs, 12_000);
    assert.equal(err.status, 429);
    assert.ok(limiter.snapshot().pausedForMs > 5000, 'every caller of the account now waits');
    const again = await kindOf(client.getPod('abc'));
    assert.equal(again.kind, 'rate-limited', 'a second caller fails fast instead of sending');
    assert.equal(server.received.length, 1);
    assert.deepEqual(
      limiter.snapshot().windows.map((w) => w.name),
      ['minute', 'hour', 'day'],
    );
    await client.close();
  });

  void it('401, 403 and 404 bodies through the transport', async () => {
    const client = createRunpodClient(options());
    server.script.push({ status: 401, body: UNAUTHORIZED_401 }, { status: 403, body: FORBIDDEN_403 }, { status: 404, body: NOT_FOUND_404 }, { status: 404, body: '<html>nginx</html>' });
    assert.equal((await kindOf(client.listPods())).kind, 'unauthorized');
    assert.equal((await kindOf(client.listDataCenters())).kind, 'forbidden');
    assert.equal((await kindOf(client.getPod('gone1'))).kind, 'not-found');
    assert.equal((await kindOf(client.getPod('gone2'))).kind, 'unexpected');
    await client.close();
  });

  void it('422 on create is never retried', async () => {
    const client = createRunpodClient(options());
    server.received.length = 0;
    server.script.push({ status: 422, body: { ...VALIDATION_422, errors: ["$: additional properties 'bogus' not allowed"] } });
    const err = await kindOf(client.createPod({ name: 'r', image: 'i', gpu: { id: 'g' } }));
    assert.equal(err.kind, 'invalid');
    assert.equal(server.received.length, 1);
    await client.close();
  });

  void it('a request our own schema rejects is never sent', async () => {
    const client = createRunpodClient(options());
    server.received.length = 0;
    const bogus = { name: 'r', image: 'i', gpu: { id: 'g' }, imageName: 'v1 leftover' } as unknown as Parameters<typeof client.createPod>[0];
    const err = await kindOf(client.createPod(bogus));
    assert.equal(err.kind, 'invalid');
    assert.equal(err.status, undefined);
    assert.equal(server.received.length, 0);
    await client.close();
  });

  void it('500 on create: ambiguous, sent exactly once', async () => {
    const client = createRunpodClient(options());
    server.received.length = 0;
    server.script.push({ status: 500, body: V1_SOMETHING_WRONG });
    const err = await kindOf(client.createPod({ name: 'r', image: 'i', gpu: { id: 'g' } }));
    assert.equal(err.kind, 'ambiguous');
    assert.equal(server.received.length, 1);
    await client.close();
  });

  void it('no answer to a create before its timeout: ambiguous, sent exactly once', async () => {
    const client = createRunpodClient(options({ timeouts: { createMs: 200 } }));
    server.received.length = 0;
    server.script.push({ status: 0, hang: true });
    const err = await kindOf(client.createPod({ name: 'r', image: 'i', gpu: { id: 'g' } }));
    assert.equal(err.kind, 'ambiguous');
    assert.match(err.detail, /no answer within 200 ms/);
    assert.equal(server.received.length, 1);
    await client.close();
  });

  void it('a 2xx create answer that cannot be read is ambiguous: the pod exists', async () => {
    const client = createRunpodClient(options());
    server.script.push({ status: 201, body: '{"id": "abc", "status": "RUN' });
    assert.equal((await kindOf(client.createPod({ name: 'r', image: 'i', gpu: { id: 'g' } }))).kind, 'ambiguous');
    server.script.push({ status: 201, body: { status: 'RUNNING' } });
    assert.equal((await kindOf(client.createPod({ name: 'r', image: 'i', gpu: { id: 'g' } }))).kind, 'ambiguous');
    server.script.push({ status: 200, body: { nopods: [] } });
    assert.equal((await kindOf(client.listPods())).kind, 'unexpected');
    await client.close();
  });

  void it('reads retry 5xx with backoff and then succeed', async () => {
    const client = createRunpodClient(options());
    server.received.length = 0;
    server.script.push({ status: 502, body: '<html>Bad gateway</html>' }, { status: 500, body: V1_SOMETHING_WRONG }, { status: 200, body: LIVE_POD_READY });
    const pod = await client.getPod('5xpma5eg46tqjq');
    assert.equal(pod.ssh?.direct?.port, 35558);
    assert.equal(server.received.length, 3);
    await client.close();
  });

  void it('reads give up after the bounded attempts with transient', async () => {
    const client = createRunpodClient(options({ retry: { baseDelayMs: 1, maxDelayMs: 2, readAttempts: 3 } }));
    server.received.length = 0;
    server.script.push({ status: 503, body: '' }, { status: 503, body: '' }, { status: 503, body: '' });
    const err = await kindOf(client.listGpuTypes());
    assert.equal(err.kind, 'transient');
    assert.equal(err.attempts, 3);
    assert.equal(server.received.length, 3);
    await client.close();
  });

  void it('deletes retry, and a 404 after a failed attempt is reported as not-found with attempts', async () => {
    const client = createRunpodClient(options());
    server.received.length = 0;
    server.script.push({ status: 500, body: V1_SOMETHING_WRONG }, { status: 404, body: NOT_FOUND_404 });
    const err = await kindOf(client.deletePod('5xpma5eg46tqjq'));
    assert.equal(err.kind, 'not-found');
    assert.equal(err.attempts, 2, 'the first attempt may have been the one that deleted it');
    assert.deepEqual(server.received.map((r) => r.method), ['DELETE', 'DELETE']);
    server.script.push({ status: 204 });
    await client.deletePod('5xpma5eg46tqjq');
    await client.close();
  });

  void it('terminate answers 204 -> null; stop answers the pod', async () => {
    const client = createRunpodClient(options());
    server.received.length = 0;
    server.script.push({ status: 204 }, { status: 200, body: STOPPED_POD });
    assert.equal(await client.podAction('5xpma5eg46tqjq', 'terminate'), null);
    const stopped = await client.podAction('5xpma5eg46tqjq', 'stop');
    assert.equal(stopped?.status, 'EXITED');
    assert.equal(stopped?.cost, 0.72);
    assert.deepEqual(server.received.map((r) => [r.url, JSON.parse(r.body) as unknown]), [
      ['/v2/pods/5xpma5eg46tqjq/action', { action: 'terminate' }],
      ['/v2/pods/5xpma5eg46tqjq/action', { action: 'stop' }],
    ]);
    await client.close();
  });

  void it('a caller abort: a create in flight is ambiguous, a read still waiting for a slot sent nothing', async () => {
    const limiter = new RateLimiter();
    const client = createRunpodClient(options({ limiter }));
    server.received.length = 0;
    server.script.push({ status: 0, hang: true });
    const controller = new AbortController();
    const create = client.createPod({ name: 'r', image: 'i', gpu: { id: 'g' } }, { signal: controller.signal });
    while (server.received.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort(new Error('shutting down'));
    assert.equal((await kindOf(create)).kind, 'ambiguous');

    limiter.backOff(60_000);
    const reader = new AbortController();
    const read = client.getPod('abc', { signal: reader.signal });
    reader.abort(new Error('shutting down'));
    const err = await kindOf(read);
    assert.equal(err.kind, 'transient');
    assert.equal(err.attempts, 0);
    assert.equal(server.received.length, 1);
    await client.close();
  });

  void it('refuses a malformed pod id or action without sending anything', async () => {
    const client = createRunpodClient(options());
    server.received.length = 0;
    assert.equal((await kindOf(client.getPod('../catalog/gpus'))).kind, 'invalid');
    assert.equal((await kindOf(client.deletePod(''))).kind, 'invalid');
    assert.equal((await kindOf(client.podAction('abc', 'explode' as 'stop'))).kind, 'invalid');
    assert.equal(server.received.length, 0);
    await client.close();
  });

  void it('follows cursor pagination and refuses a repeated cursor', async () => {
    const client = createRunpodClient(options());
    server.received.length = 0;
    server.script.push(
      { status: 200, body: { pods: [LIVE_POD_BOOTING], pagination: { hasNextPage: true, nextCursor: 'c2' } } },
      { status: 200, body: { pods: [{ ...STOPPED_POD, id: 'second000000' }], pagination: { hasNextPage: false, nextCursor: null } } },
    );
    const pods = await client.listPods();
    assert.deepEqual(pods.map((p) => p.id), ['5xpma5eg46tqjq', 'second000000']);
    assert.deepEqual(server.received.map((r) => r.url), ['/v2/pods', '/v2/pods?cursor=c2']);

    server.script.push(
      { status: 200, body: { pods: [], pagination: { hasNextPage: true, nextCursor: 'loop' } } },
      { status: 200, body: { pods: [], pagination: { hasNextPage: true, nextCursor: 'loop' } } },
    );
    assert.equal((await kindOf(client.listPods())).kind, 'unexpected');
    await client.close();
  });

  void it('refuses a page that says more follow but gives no cursor: the list cannot be completed, so it is no list', async () => {
    const client = createRunpodClient(options());
    for (const nextCursor of [null, '', undefined]) {
      server.script.push({ status: 200, body: { pods: [LIVE_POD_BOOTING], pagination: { hasNextPage: true, ...(nextCursor === undefined ? {} : { nextCursor }) } } });
      const err = await kindOf(client.listPods());
      assert.equal(err.kind, 'unexpected', `nextCursor ${String(nextCursor)}`);
      assert.match(err.message, /next page/);
    }
    await client.close();
  });

  void it('never follows a redirect (the key would travel with it)', async () => {
    const elsewhere = await startFixtureServer(() => ({ status: 200, body: LIVE_POD_BOOTING }));
    const client = createRunpodClient(options());
    server.script.push({ status: 307, headers: { location: `${elsewhere.baseUrl}/pods/abc` } });
    assert.equal((await kindOf(client.getPod('abc'))).kind, 'unexpected');
    assert.equal(elsewhere.received.length, 0);
    await client.close();
    await elsewhere.stop();
  });

  void it('a refused connection on create is transient: nothing was sent', async () => {
    const closed = await startFixtureServer();
    const baseUrl = closed.baseUrl;
    await closed.stop();
    const client = createRunpodClient(options({ baseUrl }));
    assert.equal((await kindOf(client.createPod({ name: 'r', image: 'i', gpu: { id: 'g' } }))).kind, 'transient');
    await client.close();
  });

  void it('reads the catalog into per-cloud prices and stock', async () => {
    const client = createRunpodClient(options());
    server.received.length = 0;
    server.script.push({
      status: 200,
      body: {
        gpus: [
          {
            id: 'NVIDIA GeForce RTX 4090',
            name: 'RTX 4090',
            pool: 'ADA_24',
            manufacturer: 'NVIDIA',
            memory: 24,
            secure: true,
            community: true,
            price: { secure: 0.69, community: 0.34 },
            maxCount: { secure: 8, community: 4 },
            availability: 'HIGH',
            dataCenters: [{ id: 'EU-RO-1', name: 'EU Romania 1', availability: 'LOW' }],
            cudaVersions: [{ version: '12.8', available: true }],
          },
          { id: 'NVIDIA A40', name: 'A40', pool: null, manufacturer: 'NVIDIA', memory: 48, secure: true, community: false, price: { secure: 0.4, community: null }, maxCount: { secure: 8, community: 0 } },
        ],
      },
    });
    const gpus = await client.listGpuTypes({ gpuCount: 2, minCudaVersion: '12.8' });
    assert.equal(server.received[0]?.url, '/v2/catalog/gpus?include=AVAILABILITY&product=POD&cloud=SECURE&count=2&minCudaVersion=12.8');
    assert.deepEqual(gpus[0], {
      id: 'NVIDIA GeForce RTX 4090',
      name: 'RTX 4090',
      manufacturer: 'NVIDIA',
      memoryGb: 24,
      secure: { offered: true, pricePerGpuHour: 0.69, maxCount: 8 },
      community: { offered: true, pricePerGpuHour: 0.34, maxCount: 4 },
      availability: 'HIGH',
      inStock: true,
      dataCenters: [{ id: 'EU-RO-1', name: 'EU Romania 1', availability: 'LOW', inStock: true }],
      cudaVersions: [{ version: '12.8', available: true }],
    });
    assert.equal(gpus[1]?.availability, 'UNKNOWN');
    assert.equal(gpus[1]?.inStock, false);
    assert.equal(gpus[1]?.community.pricePerGpuHour, null);
    await client.close();
  });

  void it('reads the data centers', async () => {
    const client = createRunpodClient(options());
    server.received.length = 0;
    server.script.push({
      status: 200,
      body: {
        dataCenters: [
          { id: 'EU-RO-1', name: 'EU Romania 1', region: 'EUROPE', globalNetwork: false, networkVolumeTypes: ['STANDARD'], compliance: ['GDPR'], gpuAvailability: [{ id: 'NVIDIA A40', name: 'A40', availability: 'NONE' }] },
        ],
      },
    });
    const dcs = await client.listDataCenters();
    assert.equal(server.received[0]?.url, '/v2/catalog/datacenters?include=GPU_AVAILABILITY');
    assert.deepEqual(dcs, [
      { id: 'EU-RO-1', name: 'EU Romania 1', region: 'EUROPE', globalNetwork: false, gpuAvailability: [{ id: 'NVIDIA A40', name: 'A40', availability: 'NONE', inStock: false }] },
    ]);
    await client.close();
  });
});

void describe('the API key never leaks', () => {
  const KEY = 'rpa_FAKEKEY_DO_NOT_LOG_0123456789';
  // Every run of 12 characters of the key: a partial echo must not survive either.
  const fragments = Array.from({ length: KEY.length - 11 }, (_, i) => KEY.slice(i, i + 12));
  const assertClean = (text: string, where: string): void => {
    for (const f of fragments) assert.ok(!text.includes(f), `${where} carries a fragment of the key (${f.length} chars)`);
  };

  void it('redactText scrubs exact, partial and key-shaped echoes', () => {
    registerApiKey(KEY);
    assert.equal(redactText(`key ${KEY} end`), 'key [REDACTED] end');
    assertClean(redactText(`partial FAKEKEY_DO_NOT_LOG_01 and suffix DO_NOT_LOG_0123456789`), 'partial echo');
    assert.equal(redactText('another rpa_SOMEOTHERKEY1234567 here'), 'another [REDACTED] here');
    assert.equal(redactText('Authorization: Bearer abcdefghijk'), 'Authorization: Bearer [REDACTED]');
  });

  void it('an echoed key reaches neither the thrown error nor the logs', async () => {
    const server = await startFixtureServer();
    const { logger, lines } = capturedLogger();
    const client = createRunpodClient({ apiKey: KEY, baseUrl: server.baseUrl, limiter: new RateLimiter(), logger, retry: { baseDelayMs: 1, maxDelayMs: 2, readAttempts: 2 } });
    const echo = (req: { headers: Record<string, string | string[] | undefined> }): string => String(req.headers.authorization);
    server.script.push(
      (req) => ({ status: 400, body: { title: 'Bad Request', status: 400, detail: `bad header Authorization: ${echo(req)}` } }),
      (req) => ({ status: 401, body: { title: 'Unauthorized', status: 401, detail: `token ${echo(req).slice(7)} is not valid` } }),
      (req) => ({ status: 500, body: `<html>upstream saw ${echo(req).slice(11, 30)}</html>` }),
      (req) => ({ status: 500, body: `<html>upstream saw ${echo(req).slice(15)}</html>` }),
      (req) => ({ status: 422, body: { title: 'Unprocessable Entity', status: 422, detail: 'Request validation failed.', errors: [`$.env.KEY: "${echo(req).slice(7)}"`] } }),
    );
    const errors: unknown[] = [];
    for (const attempt of [
      () => client.createPod({ name: 'r', image: 'i', gpu: { id: 'g' } }),
      () => client.listPods(),
      () => client.getPod('abc'),
      () => client.podAction('abc', 'start'),
    ]) {
      try {
        await attempt();
      } catch (err) {
        errors.push(err);
      }
    }
    assert.equal(errors.length, 4);
    assert.equal(server.received.length, 5, 'the getPod retry saw a second echo');
    for (const err of errors) {
      assert.ok(isRunpodError(err));
      for (const [where, text] of [
        ['message', err.message],
        ['String(err)', String(err)],
        ['JSON.stringify(err)', JSON.stringify(err)],
        ['stack', err.stack ?? ''],
        ['inspect', inspect(err, { depth: 5 })],
        ['detail', err.detail],
      ] as const) {
        assertClean(text, `${err.kind} ${where}`);
      }
    }
    assert.ok(lines.length > 0, 'the retry was logged');
    assertClean(lines.join('\n'), 'log output');
    await client.close();
    await server.stop();
  });
});
