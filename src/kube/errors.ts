// Classifying errors from client-node 2.x: generated calls throw ApiException whose `body` is the raw
// response text (a JSON metav1.Status, or undefined for a 401); Watch throws Error with `statusCode`;
// network failures surface as undici errors (`TypeError: fetch failed`, `TypeError: terminated`)
// that carry no status and often no `code` of their own.
import { redact } from '../log.ts';

export interface KubeStatus {
  code?: number;
  reason?: string;
  message?: string;
  details?: unknown;
}

/** Raised instead of a bare 409 where a write lost an optimistic-concurrency race; requeue quietly. */
export class ConflictError extends Error {
  readonly code = 409;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConflictError';
  }
}

/** A failure that retrying cannot fix: the controller logs it and does not requeue. */
export class TerminalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
}

/** The HTTP status of an API error (ApiException.code, Watch's statusCode, or a Status object). */
export function statusCodeOf(err: unknown): number | undefined {
  const e = record(err);
  if (!e) return undefined;
  for (const field of ['code', 'statusCode']) {
    const value = e[field];
    if (typeof value === 'number' && value >= 100 && value < 600) return value;
  }
  return undefined;
}

/** The metav1.Status in an ApiException body, parsed defensively (string, object or garbage). */
export function statusOf(err: unknown): KubeStatus | undefined {
  const e = record(err);
  if (!e) return undefined;
  let body: unknown = e.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body) as unknown;
    } catch {
      return undefined;
    }
  }
  const b = record(body);
  if (!b) return undefined;
  const status: KubeStatus = {};
  if (typeof b.code === 'number') status.code = b.code;
  if (typeof b.reason === 'string') status.reason = b.reason;
  if (typeof b.message === 'string') status.message = b.message;
  if (b.details !== undefined) status.details = b.details;
  return status;
}

export function isApiStatus(err: unknown, code: number): boolean {
  return statusCodeOf(err) === code;
}

/** The machine-readable reason (`Conflict`, `NotFound`, `AlreadyExists`, `Expired`, ...). */
export function reasonOf(err: unknown): string | undefined {
  return statusOf(err)?.reason;
}

export const isNotFound = (err: unknown): boolean => isApiStatus(err, 404);
export const isGone = (err: unknown): boolean => isApiStatus(err, 410);
export const isAlreadyExists = (err: unknown): boolean => isApiStatus(err, 409) && reasonOf(err) === 'AlreadyExists';
/** An optimistic-concurrency conflict (stale resourceVersion), as opposed to AlreadyExists on a create. */
export const isConflict = (err: unknown): boolean => err instanceof ConflictError || (isApiStatus(err, 409) && !isAlreadyExists(err));

const transientCodes = new Set(['ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);

/** Network failures (undici or node), client timeouts, 429 and 5xx: worth retrying as they are. */
export function isTransient(err: unknown): boolean {
  const code = statusCodeOf(err);
  if (code !== undefined) return code === 429 || code >= 500;
  for (let e: unknown = err, depth = 0; e !== undefined && depth < 5; e = record(e)?.cause, depth++) {
    const r = record(e);
    if (!r) return false;
    if (typeof r.code === 'string' && (transientCodes.has(r.code) || r.code.startsWith('UND_ERR_'))) return true;
    if (e instanceof TypeError && (r.message === 'fetch failed' || r.message === 'terminated')) return true;
    if (r.name === 'TimeoutError') return true;
  }
  return false;
}

export function isAbort(err: unknown): boolean {
  return record(err)?.name === 'AbortError';
}

/**
 * A short, secret-free description for logs and events. ApiException's own message embeds the whole
 * body and headers, so it is replaced by `HTTP <code> <reason>: <message>`.
 */
export function describeError(err: unknown): string {
  const code = statusCodeOf(err);
  const status = statusOf(err);
  let text: string;
  if (code !== undefined && (status || !(err instanceof Error) || err.message.startsWith('HTTP-Code'))) {
    text = `HTTP ${code}${status?.reason ? ` ${status.reason}` : ''}${status?.message ? `: ${status.message}` : ''}`;
  } else if (err instanceof Error) {
    text = err.message || err.name;
    const cause = record(err.cause);
    if (cause) {
      const causeText = typeof cause.code === 'string' ? cause.code : typeof cause.message === 'string' ? cause.message : '';
      if (causeText) text += ` (${causeText})`;
    }
  } else {
    text = String(err);
  }
  return redact(text);
}
