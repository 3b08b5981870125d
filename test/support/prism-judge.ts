// An independent judge of the Runpod contract: Stoplight Prism (npm @stoplight/prism-cli), an OpenAPI
// validator none of us wrote, in proxy mode between our Runpod client and the simulator, reading
// test/runpod/openapi-v2.json. Every exchange goes
//
//   client -> recorder -> Prism (validates request and response) -> tap -> simulator
//
// The recorder keeps each exchange with the violations Prism reported for it in its `sl-violations`
// response header (prism-http-server sets it on every answer with a request or response violation);
// the tap forwards to the simulator of the moment (one Prism per test file, a simulator per test) and
// serves the canary pod, a deliberately broken answer that proves Prism judges responses at all.
//
// Why not `--errors`: with it Prism answers a request it finds invalid itself, so the simulator's
// answer to that request is never judged, and it refuses a path the spec lacks instead of forwarding
// it. Without it Prism changes no traffic and reports everything in the header, which the recorder
// reads for every exchange; a test then fails on any violation (assertNoViolations), and on any
// answer Prism made up itself (its own errors; the mock it serves when upstream answers 501).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** The vendored copy of ../shared/runpod/openapi-v2.json (see test/runpod/README.md). */
export const SPEC_PATH = fileURLToPath(new URL('../runpod/openapi-v2.json', import.meta.url));
const PRISM_CLI = fileURLToPath(new URL('../../node_modules/@stoplight/prism-cli/dist/index.js', import.meta.url));
/** GET on it returns a Pod missing most required fields; nothing else knows this id. */
export const CANARY_POD_ID = 'judgecanary000';
/** A request carrying this header is a deliberate violation: kept apart from the run's traffic. */
export const CANARY_HEADER = 'x-judge-canary';
const TAP_HEADER = 'x-judge-tap';

const violationSchema = z.object({
  location: z.array(z.string()),
  severity: z.string(),
  code: z.union([z.string(), z.number()]).optional(),
  message: z.string(),
});
export type Violation = z.infer<typeof violationSchema>;

export interface Exchange {
  method: string;
  path: string;
  status: number;
  violations: Violation[];
  /** The canary header's value, if the test sent this request to prove a violation is seen. */
  canary?: string;
}

/** A path the spec does not have that we call on purpose: Prism reports "Selected route not found". */
export interface OffSpecCall {
  method: string;
  /** Exact path, e.g. /v2/account/limits. */
  path: string;
  /** Where the call is documented, since openapi-v2.json does not have it (nor a schema to judge its answer by). */
  source: string;
}

export interface PrismJudge {
  /** Give this to the client or the controller: http://127.0.0.1:<recorder>/v2 */
  baseUrl: string;
  exchanges: Exchange[];
  /** Where the tap forwards: the simulator's base URL (".../v2"), changed per test. */
  judge(simulatorBaseUrl: string): void;
  /** Every violation outside canaries and the declared off-spec calls, one line each. */
  violations(): string[];
  assertNoViolations(): void;
  /** What Prism printed (its own log), for a failure message. */
  log(): string;
  stop(): Promise<void>;
}

export interface PrismJudgeOptions {
  offSpec?: OffSpecCall[];
}

const ROUTE_NOT_FOUND = 'Selected route not found';

export async function startPrismJudge(options: PrismJudgeOptions = {}): Promise<PrismJudge> {
  const offSpec = options.offSpec ?? [];
  const dir = mkdtempSync(join(tmpdir(), 'prism-judge-'));
  let upstream: URL | undefined;
  const tap = await listen(createServer((req, res) => {
    // Every answer that passed the tap is marked, so the recorder knows one Prism made up (its own
    // error, or the mock it serves for an upstream 501) from one the simulator gave.
    res.setHeader(TAP_HEADER, 'passed');
    if (req.method === 'GET' && req.url === `/v2/pods/${CANARY_POD_ID}`) return sendJson(res, 200, { id: CANARY_POD_ID, status: 'SLEEPING' });
    if (!upstream) return sendJson(res, 503, { title: 'no simulator behind the judge', status: 503 });
    forward(req, res, upstream, () => undefined);
  }));

  // OpenAPI 3.1 schemas are JSON Schema 2020-12 unless the document says otherwise; Prism 5.16 instead
  // compiles them as draft-07 unless `jsonSchemaDialect` is set, which silently drops
  // `unevaluatedProperties` (CreatePodRequest's "unknown field is an error"). State the default.
  const spec = JSON.parse(readFileSync(SPEC_PATH, 'utf8')) as Record<string, unknown>;
  const specPath = join(dir, 'openapi-v2.json');
  writeFileSync(specPath, JSON.stringify({ ...spec, jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema' }));

  const prismPort = await freePort();
  const prismOut: string[] = [];
  // setpriv (util-linux, which the simulator needs anyway) makes the kernel kill Prism when this
  // process dies in any way, a signal included; stop() ends it on every ordinary path.
  const prism = spawn('setpriv', ['--pdeathsig', 'KILL', '--', process.execPath, PRISM_CLI, 'proxy', specPath, `http://127.0.0.1:${tap.port}`, '--host', '127.0.0.1', '--port', String(prismPort), '--cors', 'false'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' },
  });
  // An exit without stop() (a test runner's process.exit) kills it too.
  const killOnExit = (): void => { prism.kill('SIGKILL'); };
  process.once('exit', killOnExit);
  const recorder = await listen(createServer((req, res) => record(req, res)));
  const exchanges: Exchange[] = [];

  function record(req: IncomingMessage, res: ServerResponse): void {
    const canary = req.headers[CANARY_HEADER];
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    forward(req, res, new URL(`http://127.0.0.1:${prismPort}/`), (status, headers) => {
      const madeUp: Violation[] = headers[TAP_HEADER] === undefined ? [{ location: ['response'], severity: 'Error', message: 'answered by Prism itself, not by the simulator' }] : [];
      exchanges.push({
        method: req.method ?? 'GET', path, status, violations: [...parseViolations(headers['sl-violations']), ...madeUp],
        ...(typeof canary === 'string' ? { canary } : {}),
      });
    });
  }

  let stopped: Promise<void> | undefined;
  const judge: PrismJudge = {
    baseUrl: `http://127.0.0.1:${recorder.port}/v2`,
    exchanges,
    judge(simulatorBaseUrl) {
      upstream = new URL(simulatorBaseUrl.replace(/\/v2\/?$/, '/'));
    },
    violations: () => violationsOf(exchanges, offSpec),
    assertNoViolations() {
      assert.ok(exchanges.length > 0, 'no traffic went through the judge');
      const found = judge.violations();
      assert.deepEqual(found, [], `Prism found ${found.length} contract violation(s) in ${exchanges.length} exchanges:\n${found.join('\n')}`);
    },
    log: () => prismOut.join(''),
    stop() {
      stopped ??= (async () => {
        process.removeListener('exit', killOnExit);
        if (prism.exitCode === null && prism.signalCode === null) {
          const exited = once(prism, 'exit');
          prism.kill('SIGTERM');
          const timer = setTimeout(() => prism.kill('SIGKILL'), 5000);
          await exited;
          clearTimeout(timer);
        }
        await Promise.all([close(recorder.server), close(tap.server)]);
        rmSync(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };

  try {
    await waitForListening(prism, prismOut);
  } catch (error) {
    await judge.stop();
    throw error;
  }
  return judge;
}

/** One line per violation outside canaries; an off-spec call is excused only its missing route. */
export function violationsOf(exchanges: Exchange[], offSpec: OffSpecCall[]): string[] {
  const lines: string[] = [];
  for (const exchange of exchanges) {
    if (exchange.canary !== undefined) continue;
    const allowed = offSpec.some((call) => call.method === exchange.method && call.path === exchange.path);
    for (const v of exchange.violations) {
      if (allowed && v.message === ROUTE_NOT_FOUND) continue;
      lines.push(`${exchange.method} ${exchange.path} -> ${exchange.status}: ${v.severity} ${v.location.join('.')}: ${v.message}`);
    }
  }
  return lines;
}

function parseViolations(header: string | string[] | undefined): Violation[] {
  if (header === undefined) return [];
  const text = Array.isArray(header) ? header.join(',') : header;
  // prism-http-server cuts the header past ~8 KB and says so; that alone is a finding.
  if (text.startsWith('Too many violations!')) return [{ location: ['response'], severity: 'Error', message: text.slice(0, 2000) }];
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = z.array(violationSchema).safeParse(json);
  return parsed.success ? parsed.data : [{ location: ['response'], severity: 'Error', message: `unreadable sl-violations header: ${text.slice(0, 500)}` }];
}

/** Pipes one exchange to `target` (same path and query), and reports the answer's status and headers. */
function forward(req: IncomingMessage, res: ServerResponse, target: URL, onAnswer: (status: number, headers: IncomingMessage['headers']) => void): void {
  const outgoing = request({
    host: target.hostname, port: target.port, method: req.method, path: req.url,
    headers: { ...req.headers, host: target.host },
  }, (answer) => {
    onAnswer(answer.statusCode ?? 0, answer.headers);
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  outgoing.on('error', () => { res.destroy(); });
  res.on('close', () => { if (!res.writableFinished) outgoing.destroy(); });
  req.pipe(outgoing);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': status >= 400 ? 'application/problem+json' : 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function listen(server: Server): Promise<{ server: Server; port: number }> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port };
}

async function close(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
}

async function freePort(): Promise<number> {
  const { server, port } = await listen(createServer());
  await close(server);
  return port;
}

/** Prism prints "Prism is listening on <url>" once it serves; it exits on a spec it cannot read. */
async function waitForListening(prism: ChildProcess, out: string[]): Promise<void> {
  // Keep a tail of Prism's log for failure messages (info level: method, path, violations; no headers).
  const keep = (chunk: Buffer): void => {
    out.push(chunk.toString());
    while (out.length > 200) out.shift();
  };
  prism.stdout?.on('data', keep);
  prism.stderr?.on('data', keep);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => { done(); reject(new Error(`Prism did not start within 90 s:\n${out.join('').slice(-3000)}`)); }, 90_000);
    const onData = (): void => {
      if (out.join('').includes('Prism is listening on')) {
        done();
        resolve();
      }
    };
    const onExit = (code: number | null, signal: string | null): void => {
      done();
      reject(new Error(`Prism exited (${code ?? signal}) before listening:\n${out.join('').slice(-3000)}`));
    };
    const done = (): void => {
      clearTimeout(timer);
      prism.stdout?.off('data', onData);
      prism.off('exit', onExit);
    };
    prism.stdout?.on('data', onData);
    prism.once('exit', onExit);
  });
}
