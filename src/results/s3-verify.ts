// Verification of a run's objects against the pod's manifest, read back from the store itself:
// HeadObject (checksum mode) per file for its size, metadata sha256 and, for a single-part object,
// its whole-object checksum; ListObjectsV2 under results/ for anything the manifest does not list.
// Only a clean verdict lets the retrieval write SHA256SUMS and the `retrieved` marker.
import { HeadObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { ManifestFile } from '../ssh/index.ts';
import { base64Digest, headObject, putSmallObject, type ResultsPath, type StoredObject } from './s3-stream.ts';
import { resultKey, type S3Target } from './s3-target.ts';
import { isS3NotFound, S3AnswerError } from './s3-errors.ts';
import { forEachLimited } from './limited.ts';

export interface ObjectsVerdict { missing: string[]; different: string[]; extra: string[] }

/** Pages of one listing at most: 10 million keys at S3's 1 000 a page, far beyond any result set. */
const MAX_LIST_PAGES = 10_000;

/**
 * Every key under `prefix` with its size (all pages). The endpoint may be anyone's: a continuation token
 * given twice, a truncated page without one, or more than MAX_LIST_PAGES pages end the listing with an
 * error instead of a loop.
 */
async function listKeys(client: S3Client, bucket: string, prefix: string, signal?: AbortSignal): Promise<Map<string, number>> {
  const keys = new Map<string, number>();
  const tokens = new Set<string>();
  let token: string | undefined;
  for (let pages = 1; ; pages++) {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }), signal ? { abortSignal: signal } : {});
    for (const object of page.Contents ?? []) if (object.Key !== undefined) keys.set(object.Key, object.Size ?? -1);
    if (!page.IsTruncated) return keys;
    token = page.NextContinuationToken;
    if (!token) throw new S3AnswerError(`ListObjectsV2 answered page ${pages} truncated without a continuation token`);
    if (tokens.has(token)) throw new S3AnswerError(`ListObjectsV2 answered page ${pages} with a continuation token it had given before: the listing would never end`);
    if (pages >= MAX_LIST_PAGES) throw new S3AnswerError(`ListObjectsV2 answered more than ${MAX_LIST_PAGES} pages under the run's prefix`);
    tokens.add(token);
  }
}

/** Why the object the store holds is not `file`, or undefined when it is. */
function objectProblem(file: ManifestFile, head: StoredObject): string | undefined {
  if (head.size !== file.size) return `${head.size} bytes, not ${file.size}`;
  if (head.sha256 !== file.sha256) return `metadata sha256 ${head.sha256 ?? '(none)'}, not ${file.sha256}`;
  // A multipart object's checksum is composite (<digest of the parts' digests>-<parts>): its parts were checked on upload.
  if (head.checksumSha256 && !head.checksumSha256.includes('-') && head.checksumSha256 !== base64Digest(file.sha256)) return 'its checksum differs';
  return undefined;
}

/** HeadObjects in flight at once: 10 000 small files are seconds, not one round trip after another. */
export const PARALLEL_HEADS = 16;

/**
 * The manifest files the store already holds exactly (size and metadata sha256), each with the path that
 * sent it (undefined: an object stored before objects said): a retry sends them no more.
 */
export async function alreadyStored(target: S3Target, files: readonly ManifestFile[], signal?: AbortSignal): Promise<Map<string, ResultsPath | undefined>> {
  const present = await listKeys(target.client, target.bucket, resultKey(target, ''), signal);
  const stored = new Map<string, ResultsPath | undefined>();
  const candidates = files.filter((file) => present.get(resultKey(target, file.path)) === file.size);
  await forEachLimited(candidates, PARALLEL_HEADS, async (file) => {
    const head = await headObject(target.client, target.bucket, resultKey(target, file.path), signal);
    if (head && objectProblem(file, head) === undefined) stored.set(file.path, head.path);
  });
  return stored;
}

export async function verifyObjects(target: S3Target, files: readonly ManifestFile[], signal?: AbortSignal): Promise<ObjectsVerdict> {
  const missing: string[] = [];
  const different: string[] = [];
  await forEachLimited(files, PARALLEL_HEADS, async (file) => {
    const head = await headObject(target.client, target.bucket, resultKey(target, file.path), signal);
    if (!head) missing.push(file.path);
    else if (objectProblem(file, head)) different.push(file.path);
  });
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

const sumsKey = (target: S3Target): string => `${target.keyPrefix}SHA256SUMS`;

/** What the store proves was verified: SHA256SUMS is written last, only after every object was. */
export interface CommittedObjects { files: number; bytes: number; path: ResultsPath; committedAt: Date }

/** Writes SHA256SUMS (the commit: last, after verification), with the counts a later reader adopts. */
export async function writeSums(target: S3Target, files: readonly ManifestFile[], path: ResultsPath, signal?: AbortSignal): Promise<void> {
  const bytes = files.reduce((sum, file) => sum + file.size, 0);
  await putSmallObject(target, sumsKey(target), sha256sums(files), signal, { files: String(files.length), bytes: String(bytes), path });
}

/** The run's committed result in the store, or undefined when there is none (as store.ts committedResults). */
export async function committedObjects(target: S3Target, signal?: AbortSignal): Promise<CommittedObjects | undefined> {
  try {
    const head = await target.client.send(new HeadObjectCommand({ Bucket: target.bucket, Key: sumsKey(target) }), signal ? { abortSignal: signal } : {});
    const files = Number(head.Metadata?.files);
    const bytes = Number(head.Metadata?.bytes);
    const path = head.Metadata?.path;
    if (!Number.isSafeInteger(files) || !Number.isSafeInteger(bytes) || (path !== 'direct' && path !== 'controller')) return undefined;
    return { files, bytes, path, committedAt: head.LastModified ?? new Date() };
  } catch (error) {
    if (isS3NotFound(error)) return undefined;
    throw error;
  }
}
