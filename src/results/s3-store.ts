// Which S3 store a run's results go to, and the client that reaches it. A run's spec.results.s3 wins;
// else the controller's --results-store when it names a bucket; else the results stay on the
// controller's disk (store.ts). Keys of a run: `<prefix><namespace>/<name>/<uid>/` (s3-target.ts).
import { S3Client } from '@aws-sdk/client-s3';
import { S3CallTimeoutError } from './s3-errors.ts';
import type { S3Target } from './s3-target.ts';

/** The controller's default bucket (--results-store s3://…, --results-s3-*). */
export interface S3Defaults { bucket: string; prefix: string; endpoint?: string | undefined; region?: string | undefined; forcePathStyle: boolean }

/** One run's bucket: where, how to address it, and which Secret (if any) holds its keys. */
export interface S3StoreSettings {
  bucket: string;
  keyPrefix: string;
  endpoint?: string | undefined;
  region?: string | undefined;
  forcePathStyle: boolean;
  /** A Secret of the run's namespace; absent: the SDK's default chain (env, IRSA, instance role). */
  credentialsSecret?: string | undefined;
  /** Why the controller's own identity may not write here (no Secret named, bucket not allowed): no client is made. */
  refused?: string | undefined;
}

/** A bucket the controller's own identity may write to (--results-s3-allowed-buckets): at AWS (no endpoint), or at `endpoint`. */
export interface AllowedBucket { bucket: string; endpoint?: string | undefined }

export interface S3Credentials { accessKeyId: string; secretAccessKey: string; sessionToken?: string | undefined }

/** What a run's spec.results.s3 says (the API's shape; this layer knows no Kubernetes). */
export interface RunS3Spec {
  bucket: string; prefix?: string | undefined; endpoint?: string | undefined; region?: string | undefined;
  forcePathStyle?: boolean | undefined; credentials?: { secretName: string } | undefined;
}

/**
 * The run's S3 store, or undefined when its results go to the controller's disk. A run's own bucket
 * without a credentials Secret would be written with the controller's identity: only a bucket an admin
 * allowed may be (the default store is the admin's own choice).
 */
export function s3SettingsFor(own: RunS3Spec | undefined, defaults: S3Defaults | undefined, run: { namespace: string; name: string; uid: string }, allowed: readonly AllowedBucket[] = []): S3StoreSettings | undefined {
  const runKeys = `${run.namespace}/${run.name}/${run.uid}/`;
  if (own) {
    const refused = own.credentials ? undefined : ambientIdentityRefusal(own, allowed);
    return {
      bucket: own.bucket, keyPrefix: `${own.prefix ?? ''}${runKeys}`, endpoint: own.endpoint, region: own.region,
      forcePathStyle: own.forcePathStyle ?? false, credentialsSecret: own.credentials?.secretName, ...(refused ? { refused } : {}),
    };
  }
  if (!defaults) return undefined;
  return { bucket: defaults.bucket, keyPrefix: `${defaults.prefix}${runKeys}`, endpoint: defaults.endpoint, region: defaults.region, forcePathStyle: defaults.forcePathStyle };
}

/** One spelling per endpoint: scheme and host as URL writes them, no trailing "/". */
const endpointKey = (endpoint: string | undefined): string | undefined => {
  if (endpoint === undefined) return undefined;
  const url = new URL(endpoint);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
};

function ambientIdentityRefusal(own: RunS3Spec, allowed: readonly AllowedBucket[]): string | undefined {
  const endpoint = endpointKey(own.endpoint);
  if (allowed.some((entry) => entry.bucket === own.bucket && endpointKey(entry.endpoint) === endpoint)) return undefined;
  const where = `bucket "${own.bucket}"${own.endpoint ? ` at ${endpoint}` : ' at AWS S3'}`;
  return `spec.results.s3.credentials: absent, and the controller's own identity may write only to the buckets of --results-s3-allowed-buckets (${where} is not one): name a Secret with the store's keys`;
}

/** What status.results.location says: the s3:// URI of the run's prefix. */
export const s3Uri = (settings: { bucket: string; keyPrefix: string }): string => `s3://${settings.bucket}/${settings.keyPrefix}`;

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
