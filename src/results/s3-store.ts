// The client that reaches a run's S3 store (where it is: s3-settings.ts), every call under a bound.
import { S3Client } from '@aws-sdk/client-s3';
import { S3CallTimeoutError } from './s3-errors.ts';
import type { S3Credentials, S3StoreSettings } from './s3-settings.ts';
import type { S3Target } from './s3-target.ts';

/** How long one store call may take: `baseMs`, plus its body at `minBytesPerSecond`, SDK retries included. */
export interface CallBounds { baseMs: number; minBytesPerSecond: number }

/** 60 s, plus the body at 1 MiB/s (a part of a large file). */
const defaultCallBounds: Readonly<CallBounds> = { baseMs: 60_000, minBytesPerSecond: 1024 * 1024 };

type Send = (command: { input?: unknown; constructor: { name: string } }, options?: { abortSignal?: AbortSignal }) => Promise<unknown>;

function bodyBytes(input: unknown): number {
  const { ContentLength, Body } = (input ?? {}) as { ContentLength?: unknown; Body?: unknown };
  if (typeof ContentLength === 'number') return ContentLength;
  if (Body instanceof Uint8Array) return Body.byteLength;
  return typeof Body === 'string' ? Buffer.byteLength(Body) : 0;
}

/**
 * Puts every call of `client` (its own, and lib-storage's parts) under a bound of its own, however the
 * endpoint trickles its answer, and reports each call that ends as progress: the endpoint is any URL a
 * run names, and a transfer that waits on it forever would hold a slot and fail /healthz for everyone.
 */
function boundCalls(client: S3Client, onProgress: (() => void) | undefined, bounds: CallBounds): void {
  const send = client.send.bind(client) as Send;
  const bounded: Send = async (command, options) => {
    const limitMs = bounds.baseMs + (bodyBytes(command.input) / bounds.minBytesPerSecond) * 1000;
    const timer = new AbortController();
    const timeout = setTimeout(() => timer.abort(), limitMs);
    const outer = options?.abortSignal;
    try {
      return await send(command, { ...options, abortSignal: outer ? AbortSignal.any([outer, timer.signal]) : timer.signal });
    } catch (error) {
      if (timer.signal.aborted && !outer?.aborted) {
        throw new S3CallTimeoutError(`${command.constructor.name.replace(/Command$/, '')} got no complete answer within ${Math.round(limitMs / 1000)} s`);
      }
      throw error;
    } finally {
      clearTimeout(timeout);
      onProgress?.();
    }
  };
  (client as unknown as { send: Send }).send = bounded;
}

/** A client for one retrieval try (destroy it after): few retries, the caller retries the try. */
export function s3TargetFor(settings: S3StoreSettings, credentials: S3Credentials | undefined, onProgress?: () => void, bounds: CallBounds = defaultCallBounds): S3Target {
  const client = new S3Client({
    ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
    // An S3-compatible store often has no region of its own; AWS needs the bucket's (env or us-east-1).
    region: settings.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
    forcePathStyle: settings.forcePathStyle,
    maxAttempts: 3,
    // A store that does not answer (a blackholed endpoint) must fail the try, not hold it for the OS's TCP timeouts.
    requestHandler: { connectionTimeout: 10_000, socketTimeout: 120_000 },
    ...(credentials ? { credentials } : {}),
  });
  boundCalls(client, onProgress, bounds);
  return { client, bucket: settings.bucket, keyPrefix: settings.keyPrefix };
}
