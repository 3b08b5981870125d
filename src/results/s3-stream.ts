// The controller-streamed path: each result file is read over SFTP and written to the store as it
// arrives, hashed on the way, so memory stays bounded whatever the file size. A file whose bytes
// differ from the pod's manifest is refused before the store completes it: a small file is checked
// before its single PutObject (which also carries ChecksumSHA256, so the store checks the whole
// object), a large one fails its multipart upload at the last byte (the upload is aborted).
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { isNoSuchFile, readPipelined, type ManifestFile, type SftpSession } from '../ssh/index.ts';
import { DEFAULT_PART_BYTES, partSizeFor } from './part-size.ts';
import type { S3Target } from './s3-target.ts';
import { isS3NotFound } from './s3-errors.ts';

/** The preferred part (part-size.ts grows it with the file); with QUEUE_SIZE parts in flight a file holds at most ~3 parts in memory. */
export const PART_SIZE_BYTES = DEFAULT_PART_BYTES;
const QUEUE_SIZE = 2;

/** The pod's bytes were not the manifest's: the file is refused (nothing completed in the store). */
export class FileRefusedError extends Error {
  readonly path: string;
  readonly kind: 'missing' | 'different';
  constructor(path: string, kind: 'missing' | 'different', detail: string) {
    super(`${path}: ${detail}`);
    this.name = 'FileRefusedError';
    this.path = path;
    this.kind = kind;
  }
}

export interface StreamOptions {
  signal?: AbortSignal | undefined;
  onProgress?: (() => void) | undefined;
  partSizeBytes?: number;
  /** The file may still be appended to (job.log): its first `file.size` bytes are the content. */
  growing?: boolean;
}

/** Who carried an object's bytes into the store: the pod itself (direct) or the controller, streaming. */
export type ResultsPath = 'direct' | 'controller';

/**
 * The user metadata every object carries: what verification compares (a multipart checksum is composite),
 * and who sent it, so that a later try that finds it stored still says which path carried it.
 */
export const objectMetadata = (sha256: string, path: ResultsPath): Record<string, string> => ({ sha256, path });
export const base64Digest = (hex: string): string => Buffer.from(hex, 'hex').toString('base64');

/**
 * Streams one file of the pod to `key`: `file` is what the manifest says of it (size, sha256).
 * Throws FileRefusedError when the pod's bytes differ or the file is gone; other errors are transport.
 */
export async function streamFileToS3(sftp: SftpSession, remotePath: string, file: ManifestFile, target: S3Target, key: string, options: StreamOptions = {}): Promise<void> {
  // A file beyond 10 000 preferred parts takes larger ones (100 GiB: 11 MiB); beyond 5 TiB it throws.
  const partSize = partSizeFor(file.size, options.partSizeBytes ?? PART_SIZE_BYTES);
  let handle: Buffer;
  try {
    handle = await sftp.open(remotePath, 'r');
  } catch (error) {
    if (isNoSuchFile(error)) throw new FileRefusedError(file.path, 'missing', 'no longer on the pod');
    throw error;
  }
  try {
    // One byte past the manifest's size is read, so a file that grew is caught without reading it all.
    const chunks = checkedAgainstManifest(readPipelined(sftp, handle, remotePath, file.size + (options.growing ? 0 : 1), options.signal), file, options.onProgress);
    if (file.size < partSize) {
      const body = await collect(chunks);
      await target.client.send(new PutObjectCommand({
        Bucket: target.bucket, Key: key, Body: body, ContentLength: body.length,
        ChecksumSHA256: base64Digest(file.sha256), Metadata: objectMetadata(file.sha256, 'controller'),
      }), options.signal ? { abortSignal: options.signal } : {});
      return;
    }
    const upload = new Upload({
      // Parts larger than the preferred one (files beyond 78 GiB) go one at a time: memory stays ~2 parts.
      client: target.client, queueSize: partSize > PART_SIZE_BYTES ? 1 : QUEUE_SIZE, partSize, leavePartsOnError: false,
      params: { Bucket: target.bucket, Key: key, Body: Readable.from(chunks), ChecksumAlgorithm: 'SHA256', Metadata: objectMetadata(file.sha256, 'controller') },
    });
    const abort = (): void => { void upload.abort(); };
    options.signal?.addEventListener('abort', abort, { once: true });
    try {
      await upload.done();
    } finally {
      options.signal?.removeEventListener('abort', abort);
    }
  } finally {
    await sftp.close(handle, remotePath).catch(() => undefined);
  }
}

/** Passes the bytes on, and fails at the end (before the store completes the object) unless they are the manifest's. */
async function* checkedAgainstManifest(chunks: AsyncIterable<Buffer>, file: ManifestFile, onProgress: (() => void) | undefined): AsyncGenerator<Buffer> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of chunks) {
    bytes += chunk.length;
    if (bytes > file.size) throw new FileRefusedError(file.path, 'different', `is larger than the manifest's ${file.size} bytes (changed on the pod)`);
    hash.update(chunk);
    onProgress?.();
    yield chunk;
  }
  if (bytes !== file.size) throw new FileRefusedError(file.path, 'different', `is ${bytes} bytes, not the manifest's ${file.size} (changed on the pod)`);
  const sha256 = hash.digest('hex');
  if (sha256 !== file.sha256) throw new FileRefusedError(file.path, 'different', `SHA-256 ${sha256} differs from the manifest's ${file.sha256} (changed on the pod)`);
}

async function collect(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return Buffer.concat(parts);
}

/** What the store holds at `key`: size, metadata sha256 and (checksum mode) its checksum; undefined when absent. */
export interface StoredObject { size: number; sha256: string | undefined; checksumSha256: string | undefined; path: ResultsPath | undefined }

export async function headObject(client: S3Client, bucket: string, key: string, signal?: AbortSignal): Promise<StoredObject | undefined> {
  try {
    const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key, ChecksumMode: 'ENABLED' }), signal ? { abortSignal: signal } : {});
    const path = head.Metadata?.path;
    return { size: head.ContentLength ?? -1, sha256: head.Metadata?.sha256, checksumSha256: head.ChecksumSHA256, path: path === 'direct' || path === 'controller' ? path : undefined };
  } catch (error) {
    if (isS3NotFound(error)) return undefined;
    throw error;
  }
}

/** Puts a small in-memory object (job.log, SHA256SUMS) with its whole-object checksum and metadata (SHA256SUMS's `path` is the results'). */
export async function putSmallObject(target: S3Target, key: string, body: Buffer, signal?: AbortSignal, metadata: Record<string, string> = {}): Promise<string> {
  const sha256 = createHash('sha256').update(body).digest('hex');
  await target.client.send(new PutObjectCommand({
    Bucket: target.bucket, Key: key, Body: body, ContentLength: body.length, ChecksumSHA256: base64Digest(sha256), Metadata: { ...objectMetadata(sha256, 'controller'), ...metadata },
    ...(key.endsWith('SHA256SUMS') ? { ContentType: 'text/plain; charset=utf-8' } : {}),
  }), signal ? { abortSignal: signal } : {});
  return sha256;
}

