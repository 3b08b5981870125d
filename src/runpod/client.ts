// The Runpod REST v2 client: every call goes through the account's rate limiter, is answered or
// classified into one RunpodError, and is retried only where repeating it cannot do harm.
import { z } from 'zod';
import pkg from '../../package.json' with { type: 'json' };
import { createLogger, type Logger } from '../log.ts';
import { type DataCenterInfo, type GpuTypeOffer, type Cloud, normalizeDataCenter, normalizeGpuType } from './catalog.ts';
import { type Clock, sleep, systemClock } from './clock.ts';
import { RunpodError, type RunpodOperation, classifyResponse, classifyTransport } from './errors.ts';
import { type HttpAnswer, type HttpRequest, TransportFailure, createHttp } from './http.ts';
import { headerValue, parseRateLimit, parseRetryAfter } from './rate-limit-headers.ts';
import { type CallPriority, type Permit, RateLimitWaitTimeout, type RateLimiter, rateLimiterForKey } from './rate-limiter.ts';
import { registerApiKey } from './redact.ts';
import {
  type CreatePodRequest,
  type Pod,
  type PodAction,
  POD_ACTIONS,
  type AccountLimits,
  accountLimitsSchema,
  createPodRequestSchema,
  listDataCentersResponseSchema,
  listGpuTypesResponseSchema,
  listPodsResponseSchema,
  podSchema,
} from './schemas.ts';

export const DEFAULT_BASE_URL = 'https://api.runpod.io/v2';
export const DEFAULT_USER_AGENT = `runpod-operator/${pkg.version}`;

export interface RunpodTimeouts {
  connectMs: number;
  /** GET calls. */
  readMs: number;
  /** POST /pods answers only once the pod is placed. */
  createMs: number;
  deleteMs: number;
  actionMs: number;
}

export interface RetryPolicy {
  /** Attempts for reads (GET) on transient failures, first one included. */
  readAttempts: number;
  /** Attempts for deletes and for the terminate / stop actions. */
  deleteAttempts: number;
  /** How many 429s any call may wait out before giving up with `rate-limited`. */
  rateLimitRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Longest a call waits for a slot or a Retry-After before failing `rate-limited` to its caller. */
  maxRateLimitWaitMs: number;
}

export const DEFAULT_TIMEOUTS: RunpodTimeouts = { connectMs: 10_000, readMs: 30_000, createMs: 60_000, deleteMs: 30_000, actionMs: 30_000 };
export const DEFAULT_RETRY: RetryPolicy = {
  readAttempts: 4,
  deleteAttempts: 5,
  rateLimitRetries: 5,
  baseDelayMs: 500,
  maxDelayMs: 10_000,
  maxRateLimitWaitMs: 60_000,
};

export interface RunpodClientOptions {
  apiKey: string;
  /** Default https://api.runpod.io/v2; plain http only to a loopback host (the simulator). */
  baseUrl?: string | undefined;
  /** Shared per account; by default the process-wide limiter of this key. */
  limiter?: RateLimiter | undefined;
  logger?: Logger | undefined;
  userAgent?: string | undefined;
  timeouts?: Partial<RunpodTimeouts> | undefined;
  retry?: Partial<RetryPolicy> | undefined;
  clock?: Clock | undefined;
  /** Told of every HTTP exchange and every wait for the request budget (metrics); never of a key or a body. */
  observer?: RunpodCallObserver | undefined;
}

/** Endpoint labels are route templates (never a pod id), statuses HTTP codes or "no_answer". */
export interface RunpodCallObserver {
  request(endpoint: string, status: string): void;
  /** A call waited for a slot of its account's budget (`budget`), or after a 429 for its Retry-After (`retry_after`). */
  rateLimitWait(cause: 'budget' | 'retry_after', seconds: number): void;
}

const ENDPOINTS: Record<RunpodOperation, string> = {
  listPods: 'GET /pods', getPod: 'GET /pods/{podId}', createPod: 'POST /pods', deletePod: 'DELETE /pods/{podId}',
  podAction: 'POST /pods/{podId}/action', listGpuTypes: 'GET /catalog/gpus', listDataCenters: 'GET /catalog/datacenters',
  getAccountLimits: 'GET /account/limits',
};

export interface CallOptions {
  signal?: AbortSignal | undefined;
  /**
   * Longest this call waits for the account's budget or a Retry-After (default the policy's
   * maxRateLimitWaitMs); beyond it the call fails `rate-limited` with the wait left, so a caller with
   * other work (a reconcile worker) can come back then instead of holding on.
   */
  maxRateLimitWaitMs?: number | undefined;
}

export interface ListGpuTypesOptions extends CallOptions {
  /** Stock is reported for this cloud (default SECURE) ... */
  cloud?: Cloud | undefined;
  /** ... and this many GPUs on one pod (default 1). */
  gpuCount?: number | undefined;
  /** Only hosts with at least this CUDA version count as stock, e.g. "12.8". */
  minCudaVersion?: string | undefined;
}

export interface RunpodClient {
  /** Every pod of the account (all pages). */
  listPods(options?: CallOptions): Promise<Pod[]>;
  /** Throws `not-found` on Runpod's 404: evidence the pod is gone, not proof. */
  getPod(id: string, options?: CallOptions): Promise<Pod>;
  /** Never resent on an unclear outcome: `ambiguous` means look the pod up by its marker. */
  createPod(request: CreatePodRequest, options?: CallOptions): Promise<Pod>;
  /** Resolves once Runpod accepted the delete; a 404 throws `not-found` (see `attempts`). */
  deletePod(id: string, options?: CallOptions): Promise<void>;
  /** The pod after the action, or null when Runpod answers 204 (terminate). */
  podAction(id: string, action: PodAction, options?: CallOptions): Promise<Pod | null>;
  listGpuTypes(options?: ListGpuTypesOptions): Promise<GpuTypeOffer[]>;
  listDataCenters(options?: CallOptions): Promise<DataCenterInfo[]>;
  /** The account's spend limit (needs the key's account:read scope). */
  getAccountLimits(options?: CallOptions): Promise<AccountLimits>;
  readonly limiter: RateLimiter;
  close(): Promise<void>;
}

interface CallSpec<T> {
  operation: RunpodOperation;
  priority: CallPriority;
  request: Omit<HttpRequest, 'signal'>;
  /** Attempts allowed on transient failures (1 = never repeated). */
  attempts: number;
  parse: (answer: HttpAnswer) => T;
}

const MAX_PAGES = 100;
const DEFAULT_RETRY_AFTER_MS = 5_000;
const POD_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Why a 2xx answer could not be used; only paths and codes, never the values (they may be secrets). */
function describeSchemaFailure(error: z.ZodError): string {
  const issues = error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
  return `answer does not have the expected shape (${issues.join('; ')})`;
}

export function createRunpodClient(options: RunpodClientOptions): RunpodClient {
  registerApiKey(options.apiKey);
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  const retry = { ...DEFAULT_RETRY, ...options.retry };
  const clock = options.clock ?? systemClock;
  const limiter = options.limiter ?? rateLimiterForKey(options.apiKey);
  const log = (options.logger ?? createLogger()).child({ component: 'runpod' });
  const http = createHttp({
    baseUrl: options.baseUrl ?? DEFAULT_BASE_URL,
    apiKey: options.apiKey,
    userAgent: options.userAgent ?? DEFAULT_USER_AGENT,
    connectTimeoutMs: timeouts.connectMs,
  });

  function backoffMs(failures: number): number {
    const ceiling = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (failures - 1));
    return Math.round(ceiling * (0.5 + 0.5 * Math.random()));
  }

  function retryAfterOf(answer: HttpAnswer): number {
    const explicit = parseRetryAfter(headerValue(answer.headers, 'retry-after'), clock.now());
    if (explicit !== undefined) return explicit;
    // Without Retry-After, the exhausted window's reset time is the next best guess.
    const exhausted = parseRateLimit(headerValue(answer.headers, 'ratelimit')).filter((w) => w.remaining === 0);
    return exhausted.length > 0 ? Math.max(...exhausted.map((w) => w.resetMs)) : DEFAULT_RETRY_AFTER_MS;
  }

  async function call<T>(spec: CallSpec<T>, callOptions: CallOptions = {}): Promise<T> {
    const { operation } = spec;
    const isCreate = operation === 'createPod';
    let sent = 0;
    let transientFailures = 0;
    let rateLimited = 0;
    const pause = async (ms: number): Promise<void> => {
      try {
        await sleep(clock, ms, callOptions.signal);
      } catch (error) {
        throw classifyTransport({ operation, error, timedOut: false, abortedByCaller: true, notSent: true, attempts: sent });
      }
    };
    const observer = options.observer;
    const endpoint = ENDPOINTS[operation];
    const maxWaitMs = callOptions.maxRateLimitWaitMs ?? retry.maxRateLimitWaitMs;
    // The wait after a 429 is the limiter's pause for its Retry-After; counted as such.
    let after429 = false;
    for (;;) {
      let permit: Permit;
      const waitFrom = clock.now();
      try {
        permit = await limiter.acquire(spec.priority, { signal: callOptions.signal, maxWaitMs });
        const waited = clock.now() - waitFrom;
        // A slot granted at once still takes a tick or two of the event loop: that is no wait.
        if (waited >= 10) observer?.rateLimitWait(after429 ? 'retry_after' : 'budget', waited / 1000);
        after429 = false;
      } catch (error) {
        if (error instanceof RateLimitWaitTimeout) {
          throw new RunpodError({ kind: 'rate-limited', operation, detail: 'the account request budget is exhausted', retryAfterMs: error.retryAfterMs, attempts: sent });
        }
        throw classifyTransport({ operation, error, timedOut: false, abortedByCaller: true, notSent: true, attempts: sent });
      }

      let answer: HttpAnswer;
      const started = clock.now();
      sent += 1;
      try {
        answer = await http.send({ ...spec.request, signal: callOptions.signal });
      } catch (failure) {
        permit.complete();
        observer?.request(endpoint, 'no_answer');
        if (!(failure instanceof TransportFailure)) throw failure;
        const err = classifyTransport({
          operation,
          error: failure.error,
          timedOut: failure.timedOut,
          timeoutMs: spec.request.timeoutMs,
          abortedByCaller: failure.abortedByCaller,
          attempts: sent,
        });
        transientFailures += 1;
        if (err.kind === 'transient' && !failure.abortedByCaller && transientFailures < spec.attempts) {
          const delayMs = backoffMs(transientFailures);
          log.warn({ operation, attempt: sent, kind: err.kind, detail: err.detail, delayMs }, 'Runpod call failed, retrying');
          await pause(delayMs);
          continue;
        }
        throw err;
      }
      permit.complete(answer.headers);
      observer?.request(endpoint, String(answer.status));
      log.debug({ operation, method: spec.request.method, path: spec.request.path, status: answer.status, ms: clock.now() - started, attempt: sent }, 'Runpod answered');

      if (answer.status >= 200 && answer.status < 300) {
        const unusable = (detail: string): RunpodError =>
          // A create that was answered 2xx did create a pod, even if we cannot read which one.
          new RunpodError({ kind: isCreate ? 'ambiguous' : 'unexpected', operation, status: answer.status, detail, attempts: sent });
        if (answer.unreadable) throw unusable('answer body could not be read as JSON');
        try {
          return spec.parse(answer);
        } catch (error) {
          if (error instanceof RunpodError) throw error;
          if (error instanceof z.ZodError) throw unusable(describeSchemaFailure(error));
          throw unusable('answer could not be interpreted');
        }
      }

      const retryAfterMs = answer.status === 429 ? retryAfterOf(answer) : undefined;
      const err = classifyResponse({ operation, status: answer.status, body: answer.body, retryAfterMs, attempts: sent });
      if (err.kind === 'rate-limited' && retryAfterMs !== undefined) {
        // A 429 is Runpod refusing the request before doing anything with it, so even a create
        // may be sent again after the wait: nothing was created by the refused attempt.
        limiter.backOff(retryAfterMs);
        rateLimited += 1;
        if (rateLimited > retry.rateLimitRetries || retryAfterMs > maxWaitMs) throw err;
        after429 = true;
        log.warn({ operation, attempt: sent, retryAfterMs }, 'Runpod rate limit reached, waiting');
        continue;
      }
      if (err.kind === 'transient') {
        transientFailures += 1;
        if (transientFailures < spec.attempts) {
          const delayMs = backoffMs(transientFailures);
          log.warn({ operation, attempt: sent, status: answer.status, detail: err.detail, delayMs }, 'Runpod call failed, retrying');
          await pause(delayMs);
          continue;
        }
      }
      throw err;
    }
  }

  function podPath(operation: RunpodOperation, id: string, suffix = ''): string {
    if (!POD_ID.test(id)) throw new RunpodError({ kind: 'invalid', operation, detail: 'pod id must be 1-64 letters, digits, _ or -' });
    return `/pods/${encodeURIComponent(id)}${suffix}`;
  }

  async function listPods(callOptions?: CallOptions): Promise<Pod[]> {
    const byId = new Map<string, Pod>();
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const answer = await call(
        {
          operation: 'listPods',
          priority: 'read',
          request: { method: 'GET', path: '/pods', query: { cursor }, timeoutMs: timeouts.readMs },
          attempts: retry.readAttempts,
          parse: (a) => listPodsResponseSchema.parse(a.body),
        },
        callOptions,
      );
      for (const pod of answer.pods) byId.set(pod.id, pod);
      const next = answer.pagination?.nextCursor;
      if (answer.pagination?.hasNextPage === false || (!next && answer.pagination?.hasNextPage !== true)) return [...byId.values()];
      // Pods beyond this page exist and cannot be read: a shorter list would make them look gone.
      if (!next) throw new RunpodError({ kind: 'unexpected', operation: 'listPods', detail: 'Runpod said a next page of pods follows but gave no cursor for it' });
      if (seen.has(next)) throw new RunpodError({ kind: 'unexpected', operation: 'listPods', detail: 'Runpod repeated a pagination cursor' });
      seen.add(next);
      cursor = next;
    }
    throw new RunpodError({ kind: 'unexpected', operation: 'listPods', detail: `more than ${MAX_PAGES} pages of pods` });
  }

  async function getPod(id: string, callOptions?: CallOptions): Promise<Pod> {
    return call(
      {
        operation: 'getPod',
        priority: 'read',
        request: { method: 'GET', path: podPath('getPod', id), timeoutMs: timeouts.readMs },
        attempts: retry.readAttempts,
        parse: (a) => podSchema.parse(a.body),
      },
      callOptions,
    );
  }

  function createPod(request: CreatePodRequest, callOptions?: CallOptions): Promise<Pod> {
    const checked = createPodRequestSchema.safeParse(request);
    if (!checked.success) {
      return Promise.reject(new RunpodError({ kind: 'invalid', operation: 'createPod', detail: `request rejected before sending: ${describeSchemaFailure(checked.error).replace(/^answer/, 'request')}` }));
    }
    return call(
      {
        operation: 'createPod',
        priority: 'create',
        request: { method: 'POST', path: '/pods', json: checked.data, timeoutMs: timeouts.createMs },
        // Never repeated on an unclear outcome: the first request may have created a billing pod.
        attempts: 1,
        parse: (a) => podSchema.parse(a.body),
      },
      callOptions,
    );
  }

  async function deletePod(id: string, callOptions?: CallOptions): Promise<void> {
    await call(
      {
        operation: 'deletePod',
        priority: 'delete',
        request: { method: 'DELETE', path: podPath('deletePod', id), timeoutMs: timeouts.deleteMs },
        attempts: retry.deleteAttempts,
        parse: () => undefined,
      },
      callOptions,
    );
  }

  async function podAction(id: string, action: PodAction, callOptions?: CallOptions): Promise<Pod | null> {
    if (!(POD_ACTIONS as readonly string[]).includes(action)) {
      throw new RunpodError({ kind: 'invalid', operation: 'podAction', detail: `unknown action; expected one of ${POD_ACTIONS.join(', ')}` });
    }
    // terminate and stop end (or cut) billing and repeating them is harmless; start and restart
    // (re)start billing and must not be doubled, so they are sent once, with a create's urgency.
    const ending = action === 'terminate' || action === 'stop';
    return call(
      {
        operation: 'podAction',
        priority: ending ? 'delete' : 'create',
        request: { method: 'POST', path: podPath('podAction', id, '/action'), json: { action }, timeoutMs: timeouts.actionMs },
        attempts: ending ? retry.deleteAttempts : 1,
        parse: (a) => (a.status === 204 || a.body === '' ? null : podSchema.parse(a.body)),
      },
      callOptions,
    );
  }

  async function listGpuTypes(listOptions: ListGpuTypesOptions = {}): Promise<GpuTypeOffer[]> {
    const answer = await call(
      {
        operation: 'listGpuTypes',
        priority: 'read',
        request: {
          method: 'GET',
          path: '/catalog/gpus',
          query: {
            include: 'AVAILABILITY',
            product: 'POD',
            cloud: listOptions.cloud ?? 'SECURE',
            count: String(listOptions.gpuCount ?? 1),
            minCudaVersion: listOptions.minCudaVersion,
          },
          timeoutMs: timeouts.readMs,
        },
        attempts: retry.readAttempts,
        parse: (a) => listGpuTypesResponseSchema.parse(a.body),
      },
      listOptions,
    );
    return answer.gpus.map(normalizeGpuType);
  }

  async function listDataCenters(callOptions?: CallOptions): Promise<DataCenterInfo[]> {
    const answer = await call(
      {
        operation: 'listDataCenters',
        priority: 'read',
        request: { method: 'GET', path: '/catalog/datacenters', query: { include: 'GPU_AVAILABILITY' }, timeoutMs: timeouts.readMs },
        attempts: retry.readAttempts,
        parse: (a) => listDataCentersResponseSchema.parse(a.body),
      },
      callOptions,
    );
    return answer.dataCenters.map(normalizeDataCenter);
  }

  async function getAccountLimits(callOptions?: CallOptions): Promise<AccountLimits> {
    return call(
      {
        operation: 'getAccountLimits',
        priority: 'read',
        request: { method: 'GET', path: '/account/limits', timeoutMs: timeouts.readMs },
        attempts: retry.readAttempts,
        parse: (a) => accountLimitsSchema.parse(a.body),
      },
      callOptions,
    );
  }

  return { listPods, getPod, createPod, deletePod, podAction, listGpuTypes, listDataCenters, getAccountLimits, limiter, close: () => http.close() };
}
