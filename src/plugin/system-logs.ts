// `kubectl runpod logs RUN --source system`: what Runpod itself says of the run's pod (image pull,
// container create, start, stop, exit), read from its log stream, GET /v2/pods/{id}/logs?source=system
// (server-sent events; API-NOTES 2026-12 addendum, part 2), with the run's own Runpod key. That stream
// replays and then never ends (runpodctl PR #325), so a reader bounds it: without -f it ends once the
// stream is quiet for a while, or at a byte or time cap; with -f it follows (picking up after the last
// event when the connection drops) until the run's pod is gone or the user interrupts.
import { Agent, request } from 'undici';
import { z } from 'zod';
import type { RunpodRun } from '../api/runpodrun.ts';
import { getRun, getRunpodKey, type Target } from './cluster.ts';
import { RUNPOD_API_URL_ENV } from './env.ts';
import { PluginError } from './errors.ts';
import { SseParser } from '../sse.ts';

/** The controller's environment variable for its --runpod-api-url (src/config.ts envName): a shell that runs both sets it once. */
const DEFAULT_API_URL = 'https://api.runpod.io/v2';
/** The most lines the stream replays (its `tail` maximum). */
const MAX_TAIL = 5000;

export interface SystemLogOptions {
  follow: boolean;
  /** Lines from the end to start with; -1: as many as Runpod keeps (its maximum, 5000). Ignored with `since`. */
  tail: number;
  since: Date | undefined;
  apiUrl: string;
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  /** Without -f: the replay is over once no event came for this long. */
  quietMs?: number;
  /** With -f: how often the run is read again, to see its pod gone. */
  runEveryMs?: number;
}

/** Without -f: at most this many bytes, and this long, whatever the stream does. */
const BYTE_CAP = 8 * 1024 * 1024;
const TIME_CAP_MS = 60_000;

const logLine = z.object({ ts: z.string(), source: z.string(), line: z.string() });
const problemBody = z.object({ detail: z.string() });

/** The Runpod API base URL: --runpod-api-url, else the controller's variable, else Runpod's own; https (http only to this machine). */
export function runpodApiUrl(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const [raw, named] = flag !== undefined ? [flag, '--runpod-api-url'] : [env[RUNPOD_API_URL_ENV] ?? DEFAULT_API_URL, RUNPOD_API_URL_ENV];
  const bad = (why: string): PluginError => new PluginError(`${named} must be ${why}, not "${raw}"`, 2);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad('a URL such as https://api.runpod.io/v2');
  }
  const loopback = /^(localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])$/i.test(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) throw bad('https (http only to this machine)');
  if (url.username || url.password || url.search || url.hash) throw bad('a base URL without credentials, query or fragment');
  return url.href.replace(/\/+$/, '');
}

/** How a read ended; `connected`: Runpod had answered 200 (a drop after that is a stream's normal end, not a failure). */
type Ending = { kind: 'done' } | { kind: 'dropped'; why: string; connected: boolean } | { kind: 'gone' };

export async function systemLogs(target: Target, name: string, options: SystemLogOptions): Promise<number> {
  const run = await getRun(target, name);
  const podId = run.status?.pod?.id;
  if (!podId) throw new PluginError(`run "${name}" has no pod${said(run)}`);
  const { apiKey, secret } = await getRunpodKey(target, run);
  if (!/^[\x21-\x7e]+$/.test(apiKey)) throw new PluginError(`${secret} holds a Runpod key with characters an HTTP header cannot carry`);
  const agent = new Agent({ connect: { timeout: 20_000 } });
  const reader = new StreamReader(options, `${options.apiUrl}/pods/${encodeURIComponent(podId)}/logs`, `Bearer ${apiKey}`, agent);
  let watcher: NodeJS.Timeout | undefined;
  try {
    if (!options.follow) {
      const ending = await reader.read(Date.now() + TIME_CAP_MS);
      if (ending.kind === 'gone') throw new PluginError(`Runpod no longer has the pod of run "${name}" (${podId}): its log went with it${said(run)}`);
      if (ending.kind === 'dropped') throw new PluginError(`the log stream of the pod of run "${name}" broke off: ${ending.why}`);
      return 0;
    }
    // Followed: the run says when its pod is gone; from then on the stream ends once quiet.
    let podGone = false;
    watcher = setInterval(() => {
      getRun(target, name).then((now) => {
        if (now.status?.pod?.id !== podId || now.status.pod.state === 'Deleted') {
          podGone = true;
          reader.quietFromNow();
        }
      }, () => undefined);
    }, options.runEveryMs ?? 5000);
    for (let failures = 0; ;) {
      const ending = await reader.read(Infinity);
      if (ending.kind === 'gone' || podGone) return 0;
      failures = ending.kind === 'dropped' && !ending.connected ? failures + 1 : 0;
      if (failures > 5) throw new PluginError(`the log stream of the pod of run "${name}" cannot be read again: ${ending.kind === 'dropped' ? ending.why : ''}`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(30_000, reader.retryMs * 2 ** Math.max(0, failures - 1))));
    }
  } finally {
    clearInterval(watcher);
    await agent.destroy();
    if (reader.skipped > 0) options.err.write(`${reader.skipped} event(s) of the stream were not log lines and were skipped\n`);
  }
}

const said = (run: RunpodRun): string => (run.status?.message ? ` (${run.status.phase ?? 'no phase'}: ${run.status.message})` : '');

/** One pod's stream, read again after a drop from the last event id (Runpod then ignores tail). */
class StreamReader {
  skipped = 0;
  retryMs = 1000;
  private lastEventId = '';
  private bytes = 0;
  private readonly options: SystemLogOptions;
  private readonly url: string;
  private readonly authorization: string;
  private readonly agent: Agent;
  private quiet: (() => void) | undefined;
  private quietAlways = false;

  constructor(options: SystemLogOptions, url: string, authorization: string, agent: Agent) {
    [this.options, this.url, this.authorization, this.agent] = [options, url, authorization, agent];
  }

  /** From now on the current read (and every later one) ends once the stream is quiet. */
  quietFromNow(): void {
    this.quietAlways = true;
    this.quiet?.();
  }

  /** Reads until the stream ends, goes quiet (without -f, or once told), hits a cap, or breaks off. */
  async read(until: number): Promise<Ending> {
    const { follow, tail, since } = this.options;
    const query = new URLSearchParams({ source: 'system' });
    if (since) query.set('since', since.toISOString());
    else query.set('tail', String(tail < 0 ? MAX_TAIL : Math.min(tail, MAX_TAIL)));
    const headers: Record<string, string> = { authorization: this.authorization, accept: 'text/event-stream', 'user-agent': 'kubectl-runpod' };
    if (this.lastEventId !== '') headers['last-event-id'] = this.lastEventId;
    const abort = new AbortController();
    let ended: Ending | undefined;
    const stop = (ending: Ending): void => {
      ended ??= ending;
      abort.abort();
    };
    let quietTimer: NodeJS.Timeout | undefined;
    const quietMs = this.options.quietMs ?? 2000;
    const armQuiet = (): void => {
      clearTimeout(quietTimer);
      if (!follow || this.quietAlways) quietTimer = setTimeout(() => stop({ kind: 'done' }), quietMs);
    };
    this.quiet = armQuiet;
    const capTimer = Number.isFinite(until) ? setTimeout(() => {
      this.options.err.write(`stopped after ${Math.round(TIME_CAP_MS / 1000)} s: the stream did not go quiet\n`);
      stop({ kind: 'done' });
    }, Math.max(0, until - Date.now())) : undefined;
    let connected = false;
    try {
      const response = await request(`${this.url}?${query.toString()}`, {
        dispatcher: this.agent, method: 'GET', headers, signal: abort.signal, headersTimeout: 30_000, bodyTimeout: 0,
      });
      if (response.statusCode !== 200) return await this.refusal(response.statusCode, response.headers['retry-after'], response.body);
      connected = true;
      armQuiet();
      const parser = new SseParser();
      response.body.setEncoding('utf8');
      for await (const chunk of response.body as AsyncIterable<string>) {
        this.bytes += Buffer.byteLength(chunk);
        for (const event of parser.push(chunk)) {
          this.print(event.data);
          armQuiet();
        }
        this.lastEventId = parser.lastEventId;
        this.retryMs = parser.retryMs ?? this.retryMs;
        if (!follow && this.bytes > BYTE_CAP) {
          this.options.err.write(`stopped after ${BYTE_CAP / 1024 / 1024} MiB of log\n`);
          stop({ kind: 'done' });
        }
      }
      return ended ?? (follow ? { kind: 'dropped', why: 'Runpod ended the stream', connected } : { kind: 'done' });
    } catch (error) {
      if (error instanceof PluginError) throw error;
      if (ended) return ended;
      return { kind: 'dropped', why: error instanceof Error ? error.message : String(error), connected };
    } finally {
      clearTimeout(quietTimer);
      clearTimeout(capTimer);
      this.quiet = undefined;
    }
  }

  private print(data: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      parsed = undefined;
    }
    const line = logLine.safeParse(parsed);
    if (!line.success) {
      this.skipped += 1;
      return;
    }
    // Asked for system lines only; anything else is not shown.
    if (line.data.source === 'system') this.options.out.write(`${line.data.ts} ${line.data.line}\n`);
  }

  /** A non-200 answer: a refusal (one sentence), the pod gone (404), or a drop worth a retry (429, 5xx). */
  private async refusal(status: number, retryAfter: string | string[] | undefined, body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<Ending> {
    let text = '';
    for await (const chunk of body) {
      text += chunk.toString('utf8');
      if (text.length > 65_536) break;
    }
    body.destroy();
    let detail = text.trim().slice(0, 300);
    try {
      detail = problemBody.parse(JSON.parse(text)).detail;
    } catch {
      // Not a problem body: its text as it came.
    }
    if (status === 404) return { kind: 'gone' };
    if (status === 429 || status >= 500) {
      const seconds = Number(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
      if (Number.isFinite(seconds) && seconds > 0) this.retryMs = Math.min(300_000, seconds * 1000);
      if (this.options.follow) return { kind: 'dropped', why: `${status} ${detail}`, connected: false };
      throw new PluginError(status === 429 ? `Runpod's rate limit for the run's key is spent; try again in ${Math.ceil(this.retryMs / 1000)} s` : `Runpod answered ${status} for the pod's log: ${detail}`);
    }
    if (status === 401 || status === 403) throw new PluginError(`Runpod refused the run's API key for the pod's log (${status}: ${detail})`);
    throw new PluginError(`Runpod refused the request for the pod's log (${status}: ${detail})`);
  }
}
