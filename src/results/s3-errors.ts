// Which failures of a retrieval try are the object store's (it refused, did not answer, or answered
// nonsense), and how they read in a status message: the store's error code and the HTTP status, never
// its message or any other part of its answer's body (the endpoint is any URL a run's author names: an
// internal service's page must not reach a status), never a request (which would carry a signature).

const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH']);

/** The store's answers make no sense (a listing that never ends): our own words, safe to show. */
export class S3AnswerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'S3AnswerError';
  }
}

/** A call that outlived its bound (s3-store.ts): our own words, safe to show. */
export class S3CallTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'S3CallTimeoutError';
  }
}

/**
 * An error the SDK raised talking to the store: a service error (it carries $metadata), a network one, or
 * ours. Told by its shape, not by the SDK's classes: this module loads without the SDK (s3-settings.ts).
 */
export function isS3Failure(error: unknown): boolean {
  if (error instanceof S3AnswerError || error instanceof S3CallTimeoutError) return true;
  if (typeof error !== 'object' || error === null) return false;
  if ('$metadata' in error || '$response' in error || (error as { name?: unknown }).name === 'TimeoutError') return true;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && networkCodes.has(code);
}

/** Error codes as S3 writes them (AccessDenied, NoSuchBucket); anything else in their place is not shown. */
const codeShape = /^[A-Za-z][A-Za-z0-9.]{0,63}$/;

/** At most ~120 characters: the code (or the network failure) and the HTTP status; no text of the answer. */
export function s3FailureText(error: unknown): string {
  if (error instanceof S3AnswerError || error instanceof S3CallTimeoutError) return error.message.slice(0, 200);
  if (!(error instanceof Error)) return 'an unknown failure';
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && networkCodes.has(code)) return `${code}: no answer from the endpoint`;
  if (error.name === 'TimeoutError') return 'TimeoutError: the endpoint did not answer in time';
  const name = codeShape.test(error.name) && error.name !== 'Error' ? error.name : 'an answer that is not S3\'s';
  return `${name}${status ? ` (HTTP ${status})` : ''}`;
}

/** The store's 404 (a HEAD answers NotFound with no body). */
export function isS3NotFound(error: unknown): boolean {
  return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404 || (error as { name?: string }).name === 'NotFound';
}
