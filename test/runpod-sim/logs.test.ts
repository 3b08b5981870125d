// GET /v2/pods/{id}/logs: server-sent events of a real pod's output (`container`) and of the platform's
// narration (`system`), read on the wire: the replay (tail, since, Last-Event-ID, source), the stream
// staying open and delivering a line printed later, its end when the pod is deleted or the simulator
// stops, and the refusals (400, 404, 401, 403).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertNoLeaks, injectFault, simPods } from './client.ts';
import { startSimulator, type RunningSimulator } from './server.ts';
import { call, field, keyPair, shArgs, sshConnect, sshdPodBody, sshExec, waitForSsh } from './testkit.ts';
import { eventually } from '../support/eventually.ts';

const KEY = 'sim-test-account-key-logs';
const OTHER = 'sim-test-account-key-logs-other';
const READ_ONLY_WRITES = 'sim-test-account-key-logs-writer';

interface LogEvent { id: string; ts: string; source: string; line: string }

interface Stream {
  status: number;
  contentType: string | null;
  /** The events so far, in order. */
  events: LogEvent[];
  /** The whole body so far. */
  raw: () => string;
  /** Resolves once the server ended the body. */
  ended: Promise<void>;
  isEnded: () => boolean;
  close: () => void;
}

/** Opens the stream and parses it strictly: every event is exactly `id: <ts>` then `data: <json>`, then a blank line. */
async function openLogs(sim: RunningSimulator, podId: string, query = '', headers: Record<string, string> = {}, key = KEY): Promise<Stream> {
  const abort = new AbortController();
  const response = await fetch(`${sim.baseUrl}/pods/${podId}/logs${query}`, { headers: { Authorization: `Bearer ${key}`, ...headers }, signal: abort.signal });
  const events: LogEvent[] = [];
  let raw = '';
  let done = false;
  const ended = (async () => {
    if (!response.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body) {
        raw += decoder.decode(chunk, { stream: true });
        const blocks = raw.split('\n\n');
        const complete = blocks.slice(events.length, -1);
        for (const block of complete) {
          const match = /^id: (\S+)\ndata: (\{.*\})$/.exec(block);
          assert.ok(match, `not an event: ${JSON.stringify(block)}`);
          const data = JSON.parse(match[2] ?? '') as { ts: string; source: string; line: string };
          assert.deepEqual(Object.keys(data), ['ts', 'source', 'line']);
          events.push({ id: match[1] ?? '', ...data });
        }
      }
    } catch (error) {
      if (!abort.signal.aborted) throw error;
    } finally {
      done = true;
    }
  })();
  return { status: response.status, contentType: response.headers.get('content-type'), events, raw: () => raw, ended, isEnded: () => done, close: () => abort.abort() };
}

const lines = (events: LogEvent[], source?: string): string[] => events.filter((event) => source === undefined || event.source === source).map((event) => event.line);

describe('pod logs (server-sent events)', () => {
  let sim: RunningSimulator;
  let podId: string;
  let ssh: Awaited<ReturnType<typeof sshConnect>>;

  before(async () => {
    sim = await startSimulator({ apiKeys: [KEY, OTHER], config: { keys: [{ key: READ_ONLY_WRITES, scopes: ['pods:write'] }], timings: { restartDelayMs: 200 } } });
    const [host, client] = [keyPair(), keyPair()];
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: sshdPodBody('talker', host, client) });
    assert.equal(created.status, 201);
    podId = String(field(created.body, 'id'));
    ssh = await sshConnect(await waitForSsh(sim, KEY, podId), host, client);
    // 150 lines on the container's stdout and one on its stderr, as the job would print them.
    await sshExec(ssh, 'i=1; while [ $i -le 150 ]; do echo "line $i"; i=$((i + 1)); done >/proc/1/fd/1; echo "to stderr" >/proc/1/fd/2');
    const all = await openLogs(sim, podId, '?source=container&tail=5000');
    await eventually('the 150 lines in the log', () => lines(all.events).includes('to stderr') && lines(all.events).includes('line 150'));
    all.close();
  });

  after(async () => {
    ssh.end();
    await sim.stop();
  });

  test('replays the last 100 lines of both sources, ids strictly increasing and equal to ts (RFC 3339, ms), then stays open', async () => {
    const stream = await openLogs(sim, podId);
    assert.equal(stream.status, 200);
    assert.equal(stream.contentType, 'text/event-stream; charset=utf-8');
    await eventually('the replay', () => stream.events.length >= 100);
    assert.equal(stream.events.length, 100);
    for (const [i, event] of stream.events.entries()) {
      assert.match(event.id, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.equal(event.ts, event.id);
      assert.ok(['container', 'system'].includes(event.source));
      if (i > 0) assert.ok(Date.parse(event.id) > Date.parse(stream.events[i - 1]?.id ?? ''), `${event.id} after ${stream.events[i - 1]?.id}`);
    }
    assert.ok(lines(stream.events, 'container').includes('line 150'));
    assert.equal(stream.isEnded(), false, 'the stream stays open after its replay');
    stream.close();
  });

  test('source and tail: the last 5 container lines; the system lines narrate create, image pull, container create and start', async () => {
    const container = await openLogs(sim, podId, '?source=container&tail=5');
    await eventually('5 lines', () => container.events.length >= 5);
    assert.deepEqual(new Set(lines(container.events)), new Set(['line 147', 'line 148', 'line 149', 'line 150', 'to stderr']));
    assert.ok(container.events.every((event) => event.source === 'container'));
    container.close();

    const system = await openLogs(sim, podId, '?source=system&tail=5000');
    await eventually('the system lines', () => lines(system.events).includes('Started container'));
    assert.deepEqual(lines(system.events).slice(0, 5), [
      `Pod ${podId} created: 1 x NVIDIA GeForce RTX 4090 in EU-RO-1 (SECURE)`,
      'Pulling image runpod/base:sim',
      'Pulled image runpod/base:sim',
      'Created container',
      'Started container',
    ]);
    assert.ok(system.events.every((event) => event.source === 'system'));
    system.close();
  });

  test('since and Last-Event-ID replay from a point (tail ignored); tail=0 is live only and a line printed later arrives', async () => {
    const all = await openLogs(sim, podId, '?source=container&tail=5000');
    await eventually('the whole log', () => lines(all.events).includes('line 150'));
    all.close();
    const at = (text: string): LogEvent => all.events.find((event) => event.line === text) ?? assert.fail(`no ${text}`);

    const since = await openLogs(sim, podId, `?source=container&tail=1&since=${encodeURIComponent(at('line 101').ts)}`);
    await eventually('the lines since line 101', () => lines(since.events).includes('line 150'));
    assert.deepEqual(lines(since.events).slice(0, 50), Array.from({ length: 50 }, (_, i) => `line ${101 + i}`));
    since.close();

    const resumed = await openLogs(sim, podId, '?source=container&tail=1', { 'Last-Event-ID': at('line 140').id });
    await eventually('the lines after line 140', () => lines(resumed.events).includes('line 150'));
    assert.deepEqual(lines(resumed.events).slice(0, 10), Array.from({ length: 10 }, (_, i) => `line ${141 + i}`));
    resumed.close();

    const live = await openLogs(sim, podId, '?tail=0');
    await sshExec(ssh, 'echo "printed later" >/proc/1/fd/1');
    await eventually('the line printed later', () => lines(live.events).includes('printed later'));
    assert.deepEqual(lines(live.events), ['printed later']);
    assert.equal(live.events[0]?.source, 'container');
    assert.equal(live.isEnded(), false);
    live.close();
  });

  test('bad query values and Last-Event-ID are 400 in the usual problem shape; an unknown or another account\'s pod is 404', async () => {
    for (const query of ['?source=both', '?source=', '?tail=-1', '?tail=5001', '?tail=ten', '?tail=1.5', '?since=yesterday', '?since=2026-12-01']) {
      const answer = await call(sim, 'GET', `/v2/pods/${podId}/logs${query}`, { key: KEY });
      assert.equal(answer.status, 400, query);
      assert.equal(answer.headers.get('content-type'), 'application/problem+json');
      assert.equal(field(answer.body, 'title'), 'Bad Request');
      assert.equal(field(answer.body, 'status'), 400);
      assert.match(String(field(answer.body, 'detail')), /^(source|tail|since) must be /, query);
    }
    const badId = await fetch(`${sim.baseUrl}/pods/${podId}/logs`, { headers: { Authorization: `Bearer ${KEY}`, 'Last-Event-ID': 'not-an-id' } });
    assert.equal(badId.status, 400);
    assert.match(String(field(await badId.json(), 'detail')), /^Last-Event-ID must be an event id/);

    assert.equal((await call(sim, 'GET', '/v2/pods/nosuchpod/logs', { key: KEY })).status, 404);
    const foreign = await call(sim, 'GET', `/v2/pods/${podId}/logs`, { key: OTHER });
    assert.deepEqual([foreign.status, field(foreign.body, 'detail')], [404, 'resource not found']);
    assert.equal((await call(sim, 'GET', `/v2/pods/${podId}/logs`)).status, 401);
    const unscoped = await call(sim, 'GET', `/v2/pods/${podId}/logs`, { key: READ_ONLY_WRITES });
    assert.deepEqual([unscoped.status, field(unscoped.body, 'detail')], [403, 'API key is missing the required scope pods:read for GET /v2/pods/{id}/logs']);
    // A pod's own key reads its own pod's log, and no other's.
    const podKey = (await simPods(sim.adminUrl)).find((pod) => pod.id === podId)?.podApiKey ?? '';
    const own = await openLogs(sim, podId, '?tail=1', {}, podKey);
    assert.equal(own.status, 200);
    own.close();
    assert.equal((await call(sim, 'GET', '/v2/pods/nosuchpod/logs', { key: podKey })).status, 403);
    // Request faults apply as to the other pod endpoints.
    await injectFault(sim.adminUrl, { fault: 'http-5xx', path: '/v2/pods/{id}/logs', status: 503 });
    assert.equal((await call(sim, 'GET', `/v2/pods/${podId}/logs`, { key: KEY })).status, 503);
  });

  test('restart and stop are narrated; deleting the pod ends the open stream after its last line', async () => {
    const stream = await openLogs(sim, podId, '?source=system&tail=0');
    assert.equal((await call(sim, 'POST', `/v2/pods/${podId}/action`, { key: KEY, body: { action: 'restart' } })).status, 200);
    await eventually('the restart narrated', () => lines(stream.events).includes('Started container'));
    assert.deepEqual(lines(stream.events), ['Restarting container', 'Container exited with code 137 (SIGKILL)', 'Created container', 'Started container']);
    assert.equal((await call(sim, 'POST', `/v2/pods/${podId}/action`, { key: KEY, body: { action: 'stop' } })).status, 200);
    await eventually('the stop narrated', () => lines(stream.events).length >= 6);
    assert.deepEqual(lines(stream.events).slice(4), ['Stopping container', 'Container exited with code 137 (SIGKILL)']);
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${podId}`, { key: KEY })).status, 204);
    await stream.ended;
    assert.equal(stream.events.at(-1)?.line, 'Terminating pod');
    assert.equal((await call(sim, 'GET', `/v2/pods/${podId}/logs`, { key: KEY })).status, 404);
    await assertNoLeaks(sim.adminUrl);
  });
});

void test('a container that exits on its own: its last line, then its exit code, then the restart', async () => {
  const sim = await startSimulator({ apiKeys: [KEY], config: { timings: { restartDelayMs: 200 } } });
  try {
    const args = shArgs('printf "unfinished line, no newline"; exit 3');
    const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'exits', image: 'x', gpu: { id: 'NVIDIA A40' }, args } });
    const id = String(field(created.body, 'id'));
    const stream = await openLogs(sim, id, '?tail=5000');
    await eventually('a restart', () => lines(stream.events).includes('Restarting container (its main process exited; restart 1)'));
    const seen = lines(stream.events);
    const exit = seen.indexOf('Container exited with code 3');
    assert.ok(exit > 0, seen.join('\n'));
    assert.equal(seen[exit - 1], 'unfinished line, no newline');
    assert.equal(stream.events[exit - 1]?.source, 'container');
    stream.close();
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${id}`, { key: KEY })).status, 204);
    await assertNoLeaks(sim.adminUrl);
  } finally {
    await sim.stop();
  }
});

void test('the simulator stops with a log stream open: the stream ends, the stop does not wait for it', async () => {
  const sim = await startSimulator({ apiKeys: [KEY] });
  const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: { name: 'quiet', image: 'x', gpu: { id: 'NVIDIA A40' } } });
  const stream = await openLogs(sim, String(field(created.body, 'id')), '?source=system');
  await eventually('the create narrated', () => stream.events.length > 0);
  const stopping = Date.now();
  await sim.stop();
  await stream.ended;
  assert.ok(Date.now() - stopping < 15_000, `stop took ${Date.now() - stopping} ms`);
});
