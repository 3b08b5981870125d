// Every failed Runpod call becomes one RunpodError whose `kind` says what the caller must do next.
// Classification happens here and only here, so no caller re-reads statuses or texts.
import { redactText } from './redact.ts';
import { problemSchema } from './schemas.ts';

export const RUNPOD_ERROR_KINDS = [
  'capacity', // no room for this GPU type (or no access to its pool): try the next candidate
  'spend-limit', // the account's spend limit ($/h across running pods) refuses this start: wait for room, any type would be refused
  'balance', // 402: the account cannot pay; stop, retrying will not help
  'invalid', // our request is wrong (422, other 400, other 4xx): never retry it unchanged
  'not-found', // Runpod's own 404: evidence that the thing is gone, never proof of it
  'rate-limited', // 429 (or our own limiter gave up waiting): wait retryAfterMs
  'unauthorized', // 401: the key is wrong or revoked
  'forbidden', // 403 not about capacity: the key lacks a scope (read-only, restricted), or a Cloudflare block
  'conflict', // 409: the action does not fit the pod's status, or a cluster pod
  'transient', // 5xx / transport / timeout on a call that is safe to repeat
  'ambiguous', // 5xx / transport / timeout on a create: the pod may exist; never resend, look it up by marker
  'unexpected', // an answer that is not Runpod's (redirect, unreadable body, foreign 404 page)
] as const;
export type RunpodErrorKind = (typeof RUNPOD_ERROR_KINDS)[number];

export type RunpodOperation = 'listPods' | 'getPod' | 'createPod' | 'deletePod' | 'podAction' | 'listGpuTypes' | 'listDataCenters' | 'getAccountLimits'
  | 'getNetworkVolume' | 'listRegistries' | 'createRegistry' | 'deleteRegistry' | 'podLogs';

const MAX_DETAIL = 300;

export interface RunpodErrorInit {
  kind: RunpodErrorKind;
  operation: RunpodOperation;
  detail: string;
  status?: number | undefined;
  retryAfterMs?: number | undefined;
  attempts?: number | undefined;
}

export class RunpodError extends Error {
  readonly kind: RunpodErrorKind;
  readonly operation: RunpodOperation;
  readonly status: number | undefined;
  /** What Runpod said (or what went wrong on the wire), redacted and capped: safe to log and to show. */
  readonly detail: string;
  readonly retryAfterMs: number | undefined;
  /** How many requests this call sent; > 1 means an earlier attempt may have taken effect. */
  readonly attempts: number;

  constructor(init: RunpodErrorInit) {
    const detail = capped(redactText(init.detail));
    const status = init.status === undefined ? '' : `, HTTP ${init.status}`;
    super(`Runpod ${init.operation} failed (${init.kind}${status}): ${detail}`);
    this.name = 'RunpodError';
    this.kind = init.kind;
    this.operation = init.operation;
    this.status = init.status;
    this.detail = detail;
    this.retryAfterMs = init.retryAfterMs;
    this.attempts = init.attempts ?? 1;
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      kind: this.kind,
      operation: this.operation,
      status: this.status,
      detail: this.detail,
      retryAfterMs: this.retryAfterMs,
      attempts: this.attempts,
    };
  }
}

function capped(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length <= MAX_DETAIL ? oneLine : `${oneLine.slice(0, MAX_DETAIL - 1)}…`;
}

export function isRunpodError(err: unknown, ...kinds: RunpodErrorKind[]): err is RunpodError {
  return err instanceof RunpodError && (kinds.length === 0 || kinds.includes(err.kind));
}
export const isCapacityError = (err: unknown): err is RunpodError => isRunpodError(err, 'capacity');
export const isSpendLimit = (err: unknown): err is RunpodError => isRunpodError(err, 'spend-limit');
export const isNotFound = (err: unknown): err is RunpodError => isRunpodError(err, 'not-found');
export const isAmbiguous = (err: unknown): err is RunpodError => isRunpodError(err, 'ambiguous');
export const isRateLimited = (err: unknown): err is RunpodError => isRunpodError(err, 'rate-limited');
/** Worth trying again later, unchanged (never true of an ambiguous create: look the pod up first). */
export const isRetryable = (err: unknown): err is RunpodError => isRunpodError(err, 'transient', 'rate-limited');
/** The account or key is unusable: no other call with it will do better. */
export const isAccountProblem = (err: unknown): err is RunpodError => isRunpodError(err, 'balance', 'unauthorized');

// The capacity texts Runpod has been seen to use (v2 puts them in `detail` of a 400).
const CAPACITY_TEXT = /no longer any instances|no instances (?:currently )?available|instances available|not enough free gpus|no gpus? available/i;
// The account spend limit (2026-12 docs: "$80 per hour across all resources"). Its refusal body is not
// documented, so it is recognised by its words on any of the statuses it could plausibly use
// (400 rule violation, 402 payment, 403 refusal), before those statuses' own meanings.
const SPEND_LIMIT_TEXT = /spend(?:ing)?[ -]limit|spend rate/i;
// A 403 about the key itself: a scoped key without the permission the call needs (2026-12 docs: "a
// valid key lacking one gets 403"), or a read-only / restricted key. Any other Runpod 403 on a create
// keeps v2's retry-table meaning "no access to this GPU pool".
const KEY_ACCESS_TEXT = /\bscopes?\b|permission|api key|read[- ]only|restricted key|not authori[sz]ed/i;

export interface ResponseFacts {
  operation: RunpodOperation;
  status: number;
  /** Parsed JSON when the body was JSON, else its text ('' when empty). */
  body: unknown;
  retryAfterMs?: number | undefined;
  attempts?: number | undefined;
}

/** Whether a body is Runpod's own problem shape (and not a proxy's or a CDN's page). */
function isRunpodProblem(body: unknown, status: number): boolean {
  const parsed = problemSchema.safeParse(body);
  if (!parsed.success || typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const p = parsed.data;
  return p.status === status || typeof p.title === 'string' || typeof p.detail === 'string' || typeof p.error === 'string';
}

/** The human part of an error body: title, detail and each validation error, or the trimmed text. */
function describeBody(body: unknown): string {
  if (typeof body === 'string') return body.trim() || '(empty body)';
  const parsed = problemSchema.safeParse(body);
  if (!parsed.success) return JSON.stringify(body) ?? '(unreadable body)';
  const p = parsed.data;
  const parts: string[] = [];
  // The title ("Bad Request") only restates the status; it is kept only when nothing better is said.
  const headline = p.detail ?? p.error ?? p.message ?? p.title;
  if (headline) parts.push(headline);
  for (const e of p.errors ?? []) parts.push(typeof e === 'string' ? e : (JSON.stringify(e) ?? ''));
  return parts.length > 0 ? parts.join('; ') : (JSON.stringify(body) ?? '(unreadable body)');
}

/** Classifies an HTTP answer that was not a success. Pure: fixture tests feed it recorded bodies. */
export function classifyResponse(facts: ResponseFacts): RunpodError {
  const { operation, status, body } = facts;
  const isCreate = operation === 'createPod';
  const runpods = isRunpodProblem(body, status);
  const detail = describeBody(body);
  const make = (kind: RunpodErrorKind): RunpodError =>
    new RunpodError({ kind, operation, status, detail, retryAfterMs: facts.retryAfterMs, attempts: facts.attempts });

  if (status >= 300 && status < 400) return make('unexpected');
  if (status === 429) return make('rate-limited');
  if (status === 408) return make(isCreate ? 'ambiguous' : 'transient');
  if (status >= 500) return make(isCreate ? 'ambiguous' : 'transient');
  if (runpods && (status === 400 || status === 402 || status === 403) && SPEND_LIMIT_TEXT.test(detail)) return make('spend-limit');
  switch (status) {
    case 400:
      return make(CAPACITY_TEXT.test(detail) ? 'capacity' : 'invalid');
    case 401:
      return make('unauthorized');
    case 402:
      return make('balance');
    case 403:
      // v2's retry table: a 403 on create means no access to that GPU pool, so the next candidate may
      // work. Two 403s are real refusals that no other candidate escapes: one whose detail is about the
      // key (a missing scope, a read-only key: KEY_ACCESS_TEXT), and one that is not Runpod's JSON
      // (Cloudflare's "error code: 1010").
      return make(isCreate && runpods && !KEY_ACCESS_TEXT.test(detail) ? 'capacity' : 'forbidden');
    case 404:
      // Only Runpod's own 404 is evidence about a pod; a proxy's or a wrong base URL's 404 is not.
      return make(runpods ? 'not-found' : 'unexpected');
    case 409:
      return make('conflict');
    default:
      return make('invalid');
  }
}

// undici's codes for failures where no byte of the request reached the server.
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE']);

export interface TransportFacts {
  operation: RunpodOperation;
  error: unknown;
  timedOut: boolean;
  timeoutMs?: number | undefined;
  abortedByCaller?: boolean | undefined;
  /** Known not to have left this process (e.g. aborted while waiting for a slot). */
  notSent?: boolean | undefined;
  attempts?: number | undefined;
}

function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  const cause = (error as { cause?: unknown }).cause;
  return cause === error ? undefined : errorCode(cause);
}

/** Classifies a failure where no HTTP answer arrived. The original error is not kept: it could carry request details. */
export function classifyTransport(facts: TransportFacts): RunpodError {
  const code = errorCode(facts.error);
  const what = facts.abortedByCaller
    ? 'aborted by the caller'
    : facts.timedOut
      ? `no answer within ${facts.timeoutMs ?? '?'} ms`
      : `transport error${code ? ` ${code}` : ''}${facts.error instanceof Error && facts.error.message ? `: ${facts.error.message}` : ''}`;
  // A connection that never opened cannot have created anything; everything else on a create might have.
  const provablyUnsent = facts.notSent === true || (!facts.timedOut && !facts.abortedByCaller && code !== undefined && NOT_SENT.has(code));
  const kind: RunpodErrorKind = facts.operation === 'createPod' && !provablyUnsent ? 'ambiguous' : 'transient';
  return new RunpodError({ kind, operation: facts.operation, detail: what, attempts: facts.attempts });
}
