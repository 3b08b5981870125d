// One HTTP exchange with Runpod: URL, auth, timeout, size cap, JSON. No retries and no meaning here.
// The key lives only in this closure (never on an object that could be logged or serialized), and
// redirects are never followed: undici follows none without its redirect interceptor, which we do
// not install, so a 3xx comes back as an answer and the key never travels to where it points.
import { Agent, request } from 'undici';
import type { HeaderRecord } from './rate-limiter.ts';

const MAX_SUCCESS_BODY = 8 * 1024 * 1024;
const MAX_ERROR_BODY = 64 * 1024;

export interface HttpAnswer {
  status: number;
  headers: HeaderRecord;
  /** Parsed JSON when the body is JSON, else the text ('' when empty). */
  body: unknown;
  /** The body was JSON-looking but did not parse, or was cut at the size cap. */
  unreadable: boolean;
}

export interface HttpRequest {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  query?: Record<string, string | undefined> | undefined;
  json?: unknown;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /**
   * A stream that never ends by itself (server-sent events): a 2xx body is read until it has been quiet
   * for quietMs, holds maxBytes, or timeoutMs passes, then closed; what came is the answer.
   */
  stream?: { quietMs: number; maxBytes: number } | undefined;
  /** The largest 2xx body read (default 8 MiB); a longer one is cut and the answer unreadable. */
  maxBodyBytes?: number | undefined;
}

/** No HTTP answer arrived. `error` is the underlying failure; never rethrow it as is. */
export class TransportFailure extends Error {
  readonly error: unknown;
  readonly timedOut: boolean;
  readonly abortedByCaller: boolean;
  constructor(error: unknown, timedOut: boolean, abortedByCaller: boolean) {
    super('no answer from Runpod');
    this.error = error;
    this.timedOut = timedOut;
    this.abortedByCaller = abortedByCaller;
  }
}

export interface Http {
  send(req: HttpRequest): Promise<HttpAnswer>;
  close(): Promise<void>;
}

const LOOPBACK_NAMES = new Set(['localhost', '[::1]', '::1']);

function isLoopback(hostname: string): boolean {
  if (LOOPBACK_NAMES.has(hostname.toLowerCase())) return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** Checks a base URL: https anywhere, plain http only to this machine (tests, the simulator, the demo). */
export function validateBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`Runpod base URL is not a URL: ${JSON.stringify(raw)}`);
  }
  if (url.username || url.password) throw new Error('Runpod base URL must not carry credentials');
  if (url.search || url.hash) throw new Error('Runpod base URL must not carry a query or fragment');
  if (url.protocol === 'http:') {
    if (!isLoopback(url.hostname)) {
      throw new Error(`Runpod base URL ${url.origin} uses plain http to a non-loopback host; use https (http is allowed only for 127.0.0.0/8, ::1 and localhost)`);
    }
  } else if (url.protocol !== 'https:') {
    throw new Error(`Runpod base URL must be https (or http to a loopback host), not ${url.protocol}`);
  }
  return url.href.replace(/\/+$/, '');
}

async function readCapped(body: AsyncIterable<Buffer>, limit: number): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      chunks.push(chunk.subarray(0, chunk.length - (size - limit)));
      return { text: Buffer.concat(chunks).toString('utf8'), truncated: true };
    }
    chunks.push(chunk);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated: false };
}

/** A never-ending body up to its first quiet spell, `maxBytes` or `until` (epoch ms), whichever comes first. */
async function readUntilQuiet(body: AsyncIterable<Buffer>, quietMs: number, maxBytes: number, until: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const iterator = body[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  try {
    while (size < maxBytes) {
      const wait = Math.min(quietMs, until - Date.now());
      if (wait <= 0) break;
      const quiet = new Promise<'quiet'>((resolve) => { timer = setTimeout(() => resolve('quiet'), wait); });
      const next = await Promise.race([iterator.next(), quiet]);
      clearTimeout(timer);
      if (next === 'quiet' || next.done) break;
      chunks.push(next.value);
      size += next.value.length;
    }
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks).toString('utf8').slice(0, maxBytes);
}

function parseBody(text: string, contentType: string): { body: unknown; unreadable: boolean } {
  const trimmed = text.trim();
  if (trimmed === '') return { body: '', unreadable: false };
  const looksJson = contentType.includes('json') || trimmed.startsWith('{') || trimmed.startsWith('[');
  if (!looksJson) return { body: text, unreadable: false };
  try {
    return { body: JSON.parse(trimmed) as unknown, unreadable: false };
  } catch {
    return { body: text, unreadable: true };
  }
}

export interface HttpOptions {
  baseUrl: string;
  apiKey: string;
  userAgent: string;
  connectTimeoutMs: number;
}

export function createHttp(options: HttpOptions): Http {
  const base = validateBaseUrl(options.baseUrl);
  if (!/^[\x21-\x7e]+$/.test(options.apiKey)) {
    // Said without quoting the key: a key with a newline or space would be cut or would inject headers.
    throw new Error('Runpod API key contains characters that cannot be sent in an HTTP header');
  }
  const authorization = `Bearer ${options.apiKey}`;
  const agent = new Agent({ connect: { timeout: options.connectTimeoutMs }, keepAliveTimeout: 10_000 });

  async function send(req: HttpRequest): Promise<HttpAnswer> {
    const url = new URL(`${base}${req.path}`);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
    const started = Date.now();
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error('timeout')), req.timeoutMs);
    const signal = req.signal ? AbortSignal.any([timeout.signal, req.signal]) : timeout.signal;
    const headers: Record<string, string> = {
      authorization,
      'user-agent': options.userAgent,
      accept: req.stream ? 'text/event-stream, application/problem+json' : 'application/json, application/problem+json',
    };
    if (req.json !== undefined) headers['content-type'] = 'application/json';
    try {
      const res = await request(url, {
        dispatcher: agent,
        method: req.method,
        headers,
        body: req.json === undefined ? undefined : JSON.stringify(req.json),
        signal,
        headersTimeout: req.timeoutMs,
        bodyTimeout: req.timeoutMs,
      });
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      if (ok && req.stream) {
        const text = await readUntilQuiet(res.body, req.stream.quietMs, req.stream.maxBytes, started + req.timeoutMs - 100);
        res.body.destroy();
        return { status: res.statusCode, headers: res.headers, body: text, unreadable: false };
      }
      const { text, truncated } = await readCapped(res.body, ok ? (req.maxBodyBytes ?? MAX_SUCCESS_BODY) : MAX_ERROR_BODY);
      if (truncated) res.body.destroy();
      const contentType = String(res.headers['content-type'] ?? '');
      const parsed = parseBody(text, contentType);
      return {
        status: res.statusCode,
        headers: res.headers,
        body: truncated && !ok ? text : parsed.body,
        unreadable: (truncated && ok) || (parsed.unreadable && ok),
      };
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      const undiciTimeout = code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT';
      throw new TransportFailure(error, timeout.signal.aborted || undiciTimeout, req.signal?.aborted === true);
    } finally {
      clearTimeout(timer);
    }
  }

  return { send, close: () => agent.close() };
}
