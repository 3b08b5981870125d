// One Runpod call, the way every call goes: a slot from the account's rate limiter, the request, and
// its answer parsed or classified into one RunpodError; transient failures are retried only where the
// spec allows (never a create that may have happened), a 429 waits out its Retry-After.
import { z } from 'zod';
import type { Logger } from '../log.ts';
import { type Clock, sleep } from './clock.ts';
import { RunpodError, type RunpodOperation, classifyResponse, classifyTransport } from './errors.ts';
import { type Http, type HttpAnswer, type HttpRequest, TransportFailure } from './http.ts';
import { headerValue, parseRateLimit, parseRetryAfter } from './rate-limit-headers.ts';
import { type CallPriority, type Permit, RateLimitWaitTimeout, type RateLimiter } from './rate-limiter.ts';

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

export const DEFAULT_RETRY: RetryPolicy = {
  readAttempts: 4,
  deleteAttempts: 5,
  rateLimitRetries: 5,
  baseDelayMs: 500,
  maxDelayMs: 10_000,
  maxRateLimitWaitMs: 60_000,
};

/** Endpoint labels are route templates (never a pod id), statuses HTTP codes or "no_answer". */
export interface RunpodCallObserver {
  request(endpoint: string, status: string): void;
  /** A call waited for a slot of its account's budget (`budget`), or after a 429 for its Retry-After (`retry_after`). */
  rateLimitWait(cause: 'budget' | 'retry_after', seconds: number): void;
}

const ENDPOINTS: Record<RunpodOperation, string> = {
  listPods: 'GET /pods', getPod: 'GET /pods/{podId}', createPod: 'POST /pods', deletePod: 'DELETE /pods/{podId}',
  podAction: 'POST /pods/{podId}/action', listGpuTypes: 'GET /catalog/gpus', listDataCenters: 'GET /catalog/datacenters',
  getAccountLimits: 'GET /account/limits', getNetworkVolume: 'GET /network-volumes/{networkVolumeId}',
  listRegistries: 'GET /registries', podLogs: 'GET /pods/{podId}/logs', createRegistry: 'POST /registries', deleteRegistry: 'DELETE /registries/{registryId}',
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

export interface CallSpec<T> {
  operation: RunpodOperation;
  priority: CallPriority;
  request: Omit<HttpRequest, 'signal'>;
  /** Attempts allowed on transient failures (1 = never repeated). */
  attempts: number;
  parse: (answer: HttpAnswer) => T;
}

const DEFAULT_RETRY_AFTER_MS = 5_000;

/** Why a 2xx answer could not be used; only paths and codes, never the values (they may be secrets). */
export function describeSchemaFailure(error: z.ZodError): string {
  const issues = error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
  return `answer does not have the expected shape (${issues.join('; ')})`;
}

export interface CallerDeps {
  retry: RetryPolicy;
  clock: Clock;
  limiter: RateLimiter;
  log: Logger;
  http: Http;
  observer?: RunpodCallObserver | undefined;
}

export function createCaller({ retry, clock, limiter, log, http, observer }: CallerDeps): <T>(spec: CallSpec<T>, callOptions?: CallOptions) => Promise<T> {
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

  return async function call<T>(spec: CallSpec<T>, callOptions: CallOptions = {}): Promise<T> {
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
    const endpoint = ENDPOINTS[operation];
    const maxWaitMs = callOptions.maxRateLimitWaitMs ?? retry.maxRateLimitWaitMs;
    // The wait after a 429 is the limiter's pause for its Retry-After; counted as such.
    let after429 = false;
    for (;;) {
      let permit: Permit;
      try {
        permit = await limiter.acquire(spec.priority, { signal: callOptions.signal, maxWaitMs });
        if (permit.waitedMs > 0) observer?.rateLimitWait(after429 ? 'retry_after' : 'budget', permit.waitedMs / 1000);
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
}
