// The Runpod REST v2 client: every call goes through the account's rate limiter, is answered or
// classified into one RunpodError, and is retried only where repeating it cannot do harm.
import pkg from '../../package.json' with { type: 'json' };
import { createLogger, type Logger } from '../log.ts';
import { type DataCenterInfo, type GpuTypeOffer, type Cloud, normalizeDataCenter, normalizeGpuType } from './catalog.ts';
import { DEFAULT_RETRY, createCaller, describeSchemaFailure, type CallOptions, type RetryPolicy, type RunpodCallObserver } from './call.ts';
import { type Clock, systemClock } from './clock.ts';
import { RunpodError, type RunpodOperation } from './errors.ts';
import { createHttp } from './http.ts';
import { type RateLimiter, rateLimiterForKey } from './rate-limiter.ts';
import { registerApiKey } from './redact.ts';
import { createResourceCalls, type RunpodResources } from './resources.ts';
import { createPodLogCall, type PodLogs } from './pod-logs.ts';
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

export const DEFAULT_TIMEOUTS: RunpodTimeouts = { connectMs: 10_000, readMs: 30_000, createMs: 60_000, deleteMs: 30_000, actionMs: 30_000 };

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

export { DEFAULT_RETRY, type CallOptions, type RetryPolicy, type RunpodCallObserver };

export interface ListGpuTypesOptions extends CallOptions {
  /** Stock is reported for this cloud (default SECURE) ... */
  cloud?: Cloud | undefined;
  /** ... and this many GPUs on one pod (default 1). */
  gpuCount?: number | undefined;
  /** Only hosts with at least this CUDA version count as stock, e.g. "12.8". */
  minCudaVersion?: string | undefined;
}

export interface RunpodClient extends RunpodResources, PodLogs {
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


const MAX_PAGES = 100;
/**
 * A page of the pod list may be far larger than any other answer: each pod is listed with its create
 * call's env, and the controller's pods carry their scripts there (about 35 KB, 39 KB a listed pod in
 * all), so 215 of them passed 8 MiB and every list failed. 256 MiB holds over 6000 such pods and still
 * ends an endless body.
 */
const MAX_LIST_PAGE_BYTES = 256 * 1024 * 1024;
const POD_ID = /^[A-Za-z0-9_-]{1,64}$/;


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

  const call = createCaller({ retry, clock, limiter, log, http, observer: options.observer });

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
          request: { method: 'GET', path: '/pods', query: { cursor }, timeoutMs: timeouts.readMs, maxBodyBytes: MAX_LIST_PAGE_BYTES },
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

  return {
    listPods, getPod, createPod, deletePod, podAction, listGpuTypes, listDataCenters, getAccountLimits,
    ...createResourceCalls(call, timeouts, retry), ...createPodLogCall(call, timeouts, retry), limiter, close: () => http.close(),
  };
}
