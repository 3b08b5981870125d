// Verification of a run's objects against the pod's manifest, read back from the store itself:
// HeadObject (checksum mode) per file for its size, metadata sha256 and, for a single-part object,
// its whole-object checksum; ListObjectsV2 under results/ for anything the manifest does not list.
// Only a clean verdict lets the retrieval write SHA256SUMS and the `retrieved` marker.
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { ManifestFile } from '../ssh/index.ts';
import { base64Digest, headObject } from './s3-stream.ts';
import { resultKey, type S3Target } from './s3-target.ts';

export interface ObjectsVerdict { missing: string[]; different: string[]; extra: string[] }

/** Every key under `prefix` with its size (all pages). */
export async function listKeys(client: S3Client, bucket: string, prefix: string, signal?: AbortSignal): Promise<Map<string, number>> {
  const keys = new Map<string, number>();
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }), signal ? { abortSignal: signal } : {});
    for (const object of page.Contents ?? []) if (object.Key !== undefined) keys.set(object.Key, object.Size ?? -1);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys;
}

/** Why the object the store holds is not `file`, or undefined when it is. */
export function objectProblem(file: ManifestFile, head: { size: number; sha256: string | undefined; checksumSha256: string | undefined }): string | undefined {
  if (head.size !== file.size) return `${head.size} bytes, not ${file.size}`;
  if (head.sha256 !== file.sha256) return `metadata sha256 ${head.sha256 ?? '(none)'}, not ${file.sha256}`;
  // A multipart object's checksum is composite (<digest of the parts' digests>-<parts>): its parts were checked on upload.
  if (head.checksumSha256 && !head.checksumSha256.includes('-') && head.checksumSha256 !== base64Digest(file.sha256)) return 'its checksum differs';
  return undefined;
}

/** The manifest files the store already holds exactly (size and metadata sha256): a retry sends them no more. */
export async function alreadyStored(target: S3Target, files: readonly ManifestFile[], signal?: AbortSignal): Promise<Set<string>> {
  const present = await listKeys(target.client, target.bucket, resultKey(target, ''), signal);
  const stored = new Set<string>();
  for (const file of files) {
    if (present.get(resultKey(target, file.path)) !== file.size) continue;
    const head = await headObject(target.client, target.bucket, resultKey(target, file.path), signal);
    if (head && objectProblem(file, head) === undefined) stored.add(file.path);
  }
  return stored;
}

export async function verifyObjects(target: S3Target, files: readonly ManifestFile[], signal?: AbortSignal): Promise<ObjectsVerdict> {
  const missing: string[] = [];
  const different: string[] = [];
  for (const file of files) {
    const head = await headObject(target.client, target.bucket, resultKey(target, file.path), signal);
    if (!head) missing.push(file.path);
    else if (objectProblem(file, head)) different.push(file.path);
  }
  const expected = new Set(files.map((file) => resultKey(target, file.path)));
  const under = resultKey(target, '');
  const extra = [...(await listKeys(target.client, target.bucket, under, signal)).keys()]
    .filter((key) => !expected.has(key)).map((key) => key.slice(under.length));
  return { missing: missing.sort(), different: different.sort(), extra: extra.sort() };
}

/**
 * `sha256sum -c` input for the run's prefix: `<hex>  results/<path>` per file, sorted by path. A name
 * with a backslash, newline or carriage return is written as GNU sha256sum writes it: the line starts
 * with "\\" and those characters are escaped, so any name survives.
 */
export function sha256sums(files: readonly ManifestFile[]): Buffer {
  const lines = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)).map((file) => {
    const name = `results/${file.path}`;
    if (!/[\\\n\r]/.test(name)) return `${file.sha256}  ${name}\n`;
    return `\\${file.sha256}  ${name.replaceAll('\\', '\\\\').replaceAll('\n', '\\n').replaceAll('\r', '\\r')}\n`;
  });
  return Buffer.from(lines.join(''), 'utf8');
}
