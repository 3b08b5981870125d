// Which S3 store a run's results go to. A run's spec.results.s3 wins; else the controller's
// --results-store when it names a bucket; else the results stay on the controller's disk (store.ts).
// Keys of a run: `<prefix><namespace>/<name>/<uid>/` (s3-target.ts). No SDK here: the client that
// reaches a store (s3-store.ts) loads with the first run that uses one.

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
