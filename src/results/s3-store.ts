// Which S3 store a run's results go to, and the client that reaches it. A run's spec.results.s3 wins;
// else the controller's --results-store when it names a bucket; else the results stay on the
// controller's disk (store.ts). Keys of a run: `<prefix><namespace>/<name>/<uid>/` (s3-target.ts).
import { S3Client } from '@aws-sdk/client-s3';
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
}

export interface S3Credentials { accessKeyId: string; secretAccessKey: string; sessionToken?: string | undefined }

/** What a run's spec.results.s3 says (the API's shape; this layer knows no Kubernetes). */
export interface RunS3Spec {
  bucket: string; prefix?: string | undefined; endpoint?: string | undefined; region?: string | undefined;
  forcePathStyle?: boolean | undefined; credentials?: { secretName: string } | undefined;
}

/** The run's S3 store, or undefined when its results go to the controller's disk. */
export function s3SettingsFor(own: RunS3Spec | undefined, defaults: S3Defaults | undefined, run: { namespace: string; name: string; uid: string }): S3StoreSettings | undefined {
  const runKeys = `${run.namespace}/${run.name}/${run.uid}/`;
  if (own) {
    return {
      bucket: own.bucket, keyPrefix: `${own.prefix ?? ''}${runKeys}`, endpoint: own.endpoint, region: own.region,
      forcePathStyle: own.forcePathStyle ?? false, credentialsSecret: own.credentials?.secretName,
    };
  }
  if (!defaults) return undefined;
  return { bucket: defaults.bucket, keyPrefix: `${defaults.prefix}${runKeys}`, endpoint: defaults.endpoint, region: defaults.region, forcePathStyle: defaults.forcePathStyle };
}

/** What status.results.location says: the s3:// URI of the run's prefix. */
export const s3Uri = (settings: { bucket: string; keyPrefix: string }): string => `s3://${settings.bucket}/${settings.keyPrefix}`;

/** A client for one retrieval try (destroy it after): few retries, the caller retries the try. */
export function s3TargetFor(settings: S3StoreSettings, credentials: S3Credentials | undefined): S3Target {
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
  return { client, bucket: settings.bucket, keyPrefix: settings.keyPrefix };
}
