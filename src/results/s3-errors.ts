// Which failures of a retrieval try are the object store's (it refused, or did not answer), and how
// they read in a status message: the SDK's error name and message, the HTTP status, never a request
// (which would carry a signature).
import { S3ServiceException } from '@aws-sdk/client-s3';

const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH']);

/** An error the SDK raised talking to the store: a service error (it carries $metadata) or a network one. */
export function isS3Failure(error: unknown): boolean {
  if (error instanceof S3ServiceException) return true;
  if (typeof error !== 'object' || error === null) return false;
  if ('$metadata' in error || (error as { name?: unknown }).name === 'TimeoutError') return true;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && networkCodes.has(code);
}

export function s3FailureText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  const code = (error as { code?: unknown }).code;
  const name = error.name && error.name !== 'Error' ? error.name : typeof code === 'string' ? code : 'Error';
  return `${name}${status ? ` (HTTP ${status})` : ''}: ${error.message.slice(0, 300)}`;
}

/** The store's 404 (a HEAD answers NotFound with no body). */
export function isS3NotFound(error: unknown): boolean {
  return (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404 || (error as { name?: string }).name === 'NotFound';
}
