// A run's way into its bucket for one try: its credentials Secret read (or the SDK's default chain),
// a client made; a missing Secret or key is a message the run waits on, never a throw. Without a Secret,
// a bucket no admin allowed gets no client at all (s3-settings.ts).
import type { S3Credentials, S3StoreSettings } from '../../results/s3-settings.ts';
import type { S3Target } from '../../results/s3-target.ts';
import type { RunApi } from './run-api.ts';

export async function openS3Target(runs: RunApi, namespace: string, settings: S3StoreSettings, onProgress?: () => void): Promise<{ ok: true; target: S3Target } | { ok: false; message: string }> {
  if (settings.refused) return { ok: false, message: settings.refused };
  let credentials: S3Credentials | undefined;
  if (settings.credentialsSecret) {
    const read = await runs.s3Credentials(namespace, settings.credentialsSecret);
    if (!read.ok) return read;
    credentials = read.credentials;
  }
  // The AWS SDK (~30 MiB) loads with the first run that uses a bucket, not with every controller.
  const { s3TargetFor } = await import('../../results/s3-store.ts');
  return { ok: true, target: s3TargetFor(settings, credentials, onProgress) };
}
