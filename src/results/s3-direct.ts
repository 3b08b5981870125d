// The direct path of an S3 retrieval: the pod uploads its own results, with URLs the controller
// presigns per file (or per part) from the manifest, each with the file's (or part's) SHA-256
// signed in, so the store itself refuses a byte that differs. The pod never holds the S3
// credentials; the URLs travel on an SSH command's stdin and are never logged (they are
// credentials while they live).
//
// Files up to the part size: one presigned PutObject each (ChecksumSHA256 + metadata sha256, both
// signed as headers). Larger files: the controller creates a multipart upload, the pod hashes each
// part (and the whole file, which must still match the manifest), the controller presigns each
// UploadPart with its checksum, the pod uploads them, the controller completes the upload, or
// aborts it on any failure. Requests against the store: 1 per small file; parts + 2 per large one.
// The PUTs go in batches (one SSH command each, up to 100 PUTs in a row; a batch of whole files is
// one curl, one kept-alive connection), a few batches at once; a large file's part size grows with it
// (part-size.ts).
import {
  AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, PutObjectCommand, UploadPartCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { z } from 'zod';
import type { SshConnection } from '../ssh/connect.ts';
import { exec, type ExecResult } from '../ssh/exec.ts';
import type { ManifestFile } from '../ssh/manifest.ts';
import { printable } from '../ssh/text.ts';
import {
  DIRECT_NO_DIR_EXIT, DIRECT_NO_TOOL_EXIT, parsePartHashes, parseUploadOutput, partCount, partHashCommand, uploadCommand, uploadStdin,
  type PartedFile, type PodUpload,
} from './s3-direct-pod.ts';
import { partSizeFor } from './part-size.ts';
import { resultKey, type S3Target } from './s3-target.ts';
import { objectMetadata } from './s3-stream.ts';

export type DirectOutcome =
  | { kind: 'uploaded'; files: number; bytes: number }      // every file PUT by the pod, store accepted each
  | { kind: 'unreachable'; message: string }                 // the pod cannot reach the endpoint: fall back to streaming
  | { kind: 'failed'; message: string };                     // reached, but an upload was refused (e.g. BadDigest): counts as an unverified try

const MIB = 1024 * 1024;
const DEFAULT_PART_SIZE_BYTES = 64 * MIB;

const optionsSchema = z.object({
  expiresInSeconds: z.number().int().min(1).max(7 * 24 * 3600),
  partSizeBytes: z.number().int().min(5 * MIB, 'at least 5 MiB (S3\'s minimum part size)').max(5 * 1024 * MIB)
    .refine((size) => size % MIB === 0, 'a whole number of MiB').default(DEFAULT_PART_SIZE_BYTES),
});

/** curl's exits for "could not reach the endpoint": resolve, connect, connect timeout. */
const UNREACHABLE_EXITS = new Set([6, 7, 28]);
/** A batch is one SSH command; its URLs are signed just before it runs, so it must end well within their life. */
const MAX_BATCH_UPLOADS = 100;
const MAX_BATCH_BYTES = 1024 * MIB;
/** The slowest store we wait for (per batch: 60 s plus the bytes at this rate, shared by the batches running at once). */
const MIN_BYTES_PER_SECOND = MIB;
/** Upload commands (one SSH exec each, its PUTs one after another) running at once. */
export const PARALLEL_BATCHES = 4;

/** Presigned URLs (and any trace of their signatures) out of a text that may reach logs, errors or status. */
function redactPresigned(text: string): string {
  return text
    .replace(/https?:\/\/[^\s"'<>]*X-Amz-[^\s"'<>]*/gi, '<presigned URL>')
    .replace(/X-Amz-(Signature|Credential|Security-Token)=[^&\s"'<>]*/gi, 'X-Amz-$1=<redacted>');
}

export async function uploadFromPod(
  ssh: SshConnection, remoteDir: string, files: ManifestFile[], target: S3Target,
  options: { expiresInSeconds: number; signal?: AbortSignal; partSizeBytes?: number },
): Promise<DirectOutcome> {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) throw new TypeError(`uploadFromPod options: ${z.prettifyError(parsed.error)}`);
  const run = new DirectRun(ssh, remoteDir, target, { ...parsed.data, ...(options.signal ? { signal: options.signal } : {}) });
  const outcome = await run.upload(files);
  return outcome.kind === 'uploaded' ? outcome : { kind: outcome.kind, message: redactPresigned(outcome.message) };
}

interface RunOptions { expiresInSeconds: number; partSizeBytes: number; signal?: AbortSignal }
type Stop = Exclude<DirectOutcome, { kind: 'uploaded' }>;
interface Planned { file: ManifestFile; upload: Omit<PodUpload, 'url'>; presign: () => Promise<string>; what: string }

class DirectRun {
  readonly #ssh: SshConnection;
  readonly #dir: string;
  readonly #target: S3Target;
  readonly #options: RunOptions;
  /** Whether the pod has tried an upload yet: a connect failure on the first one means "unreachable". */
  #tried = false;

  constructor(ssh: SshConnection, dir: string, target: S3Target, options: RunOptions) {
    this.#ssh = ssh;
    this.#dir = dir;
    this.#target = target;
    this.#options = options;
  }

  async upload(files: ManifestFile[]): Promise<DirectOutcome> {
    const { partSizeBytes } = this.#options;
    const small = files.filter((file) => file.size <= partSizeBytes);
    // The part grows with the file (part-size.ts): a file beyond 10 000 parts of the preferred size still goes.
    const large = files.filter((file) => file.size > partSizeBytes).map((file) => ({ file, partMiB: partSizeFor(file.size, partSizeBytes) / MIB }));
    const stop = await this.#runAll(small.map((file) => this.#single(file)), () => undefined);
    if (stop) return stop;
    if (large.length > 0) {
      const hashed = await this.#hashParts(large);
      if ('kind' in hashed) return hashed;
      for (const [i, parted] of large.entries()) {
        const stopped = await this.#multipart(parted, hashed.hashes[i]?.parts ?? []);
        if (stopped) return stopped;
      }
    }
    return { kind: 'uploaded', files: files.length, bytes: files.reduce((sum, file) => sum + file.size, 0) };
  }

  #single(file: ManifestFile): Planned {
    const checksum = Buffer.from(file.sha256, 'hex').toString('base64');
    const command = new PutObjectCommand({
      Bucket: this.#target.bucket, Key: resultKey(this.#target, file.path), ChecksumSHA256: checksum, Metadata: objectMetadata(file.sha256, 'direct'),
    });
    const headers = [['x-amz-checksum-sha256', checksum], ['x-amz-meta-sha256', file.sha256], ['x-amz-meta-path', 'direct']] as const;
    return {
      file, what: printable(file.path), upload: { path: file.path, headers },
      presign: () => this.#presign(command, headers),
    };
  }

  /** The URL of `command` with `headers` signed as headers (never hoisted into the query). */
  async #presign(command: PutObjectCommand | UploadPartCommand, headers: ReadonlyArray<readonly [string, string]>): Promise<string> {
    const names = new Set(headers.map(([name]) => name));
    const options = { expiresIn: this.#options.expiresInSeconds, unhoistableHeaders: new Set(names) };
    const { client } = this.#target;
    const url = command instanceof PutObjectCommand ? await getSignedUrl(client, command, options) : await getSignedUrl(client, command, options);
    // The pod sends exactly the headers named here; a header the SDK signed beyond them would make every PUT a 403.
    const signed = new URL(url).searchParams.get('X-Amz-SignedHeaders')?.split(';') ?? [];
    const unknown = signed.filter((name) => name !== 'host' && !names.has(name));
    if (unknown.length > 0 || !headers.every(([name]) => signed.includes(name))) {
      throw new Error(`presigning ${command.constructor.name}: signed headers ${signed.join(', ')} differ from the ones the pod sends`);
    }
    return url;
  }

  /**
   * Runs the uploads in batches, PARALLEL_BATCHES at a time (the very first alone: a pod that cannot
   * reach the store says so on its first PUT), starting none after the first failure, whose Stop (the
   * earliest batch's, when several fail) is returned; `onOk` sees each accepted upload (with its ETag).
   */
  async #runAll(planned: Planned[], onOk: (index: number, etag: string | undefined) => void): Promise<Stop | undefined> {
    // Every batch's URLs are signed just before it runs and it shares the link with the others: it must end well within their life.
    const maxBytes = Math.max(1, Math.min(MAX_BATCH_BYTES, (this.#options.expiresInSeconds * 2 * MIB) / PARALLEL_BATCHES));
    const batches: { start: number; end: number; bytes: number }[] = [];
    for (let start = 0; start < planned.length;) {
      let end = start + 1;
      let bytes = bytesOf(planned[start]);
      while (end < planned.length && end - start < MAX_BATCH_UPLOADS && bytes + bytesOf(planned[end]) <= maxBytes) bytes += bytesOf(planned[end++]);
      batches.push({ start, end, bytes });
      start = end;
    }
    const stops = new Map<number, Stop>();
    let failure: { error: unknown } | undefined;
    let next = 0;
    const runOne = async (index: number): Promise<void> => {
      const { start, end, bytes } = batches[index] as { start: number; end: number; bytes: number };
      try {
        const stop = await this.#batch(planned.slice(start, end), bytes, (i, etag) => onOk(start + i, etag));
        if (stop) stops.set(index, stop);
      } catch (error) {
        failure ??= { error };
      }
    };
    const going = (): boolean => stops.size === 0 && !failure && next < batches.length;
    if (!this.#tried && going()) await runOne(next++);
    await Promise.all(Array.from({ length: PARALLEL_BATCHES }, async () => {
      while (going()) await runOne(next++);
    }));
    if (failure) throw failure.error;
    return [...stops.entries()].sort(([a], [b]) => a - b)[0]?.[1];
  }

  async #batch(batch: Planned[], bytes: number, onOk: (index: number, etag: string | undefined) => void): Promise<Stop | undefined> {
    const uploads: PodUpload[] = [];
    for (const item of batch) uploads.push({ ...item.upload, url: await item.presign() });
    const first = !this.#tried;
    this.#tried = true;
    const result = await this.#exec(uploadCommand(this.#dir, uploads), 60_000 + ((bytes * PARALLEL_BATCHES) / MIN_BYTES_PER_SECOND) * 1000, uploadStdin(uploads));
    const problem = commandProblem(result, this.#dir, 'uploading');
    if (problem) return problem;
    const reports = parseUploadOutput(result.stdout.toString('utf8'), uploads.length);
    for (const [index, item] of batch.entries()) {
      const report = reports[index];
      if (!report) return { kind: 'failed', message: `the pod's upload command ended before ${item.what} (${exitText(result)})` };
      if (report.ok && report.http >= 200 && report.http < 300) {
        onOk(index, report.etag);
        continue;
      }
      if (!report.ok && first && index === 0 && report.http === 0 && UNREACHABLE_EXITS.has(report.curlExit)) {
        return { kind: 'unreachable', message: `the pod cannot reach the object store (curl exit ${report.curlExit} uploading ${item.what})` };
      }
      if (report.http === 0) return { kind: 'failed', message: `uploading ${item.what}: no answer from the store (curl exit ${report.ok ? 0 : report.curlExit})` };
      return { kind: 'failed', message: `the store refused ${item.what} (HTTP ${report.http}${!report.ok && report.code ? ` ${report.code}` : ''})` };
    }
    return undefined;
  }

  async #hashParts(large: { file: ManifestFile; partMiB: number }[]): Promise<{ hashes: { parts: string[] }[] } | Stop> {
    const parted: PartedFile[] = large.map(({ file, partMiB }) => ({ path: file.path, size: file.size, partMiB }));
    const bytes = large.reduce((sum, { file }) => sum + file.size, 0);
    const result = await this.#exec(partHashCommand(this.#dir, parted), 60_000 + (bytes / MIN_BYTES_PER_SECOND) * 1000);
    const problem = commandProblem(result, this.#dir, 'hashing the parts');
    if (problem) return problem;
    const hashes = parsePartHashes(result.stdout.toString('utf8'), parted);
    for (const [i, { file }] of large.entries()) {
      if (hashes[i]?.whole !== file.sha256) return { kind: 'failed', message: `${printable(file.path)} changed on the pod since the manifest was taken` };
    }
    return { hashes };
  }

  async #multipart({ file, partMiB }: { file: ManifestFile; partMiB: number }, partDigests: string[]): Promise<Stop | undefined> {
    const { client, bucket } = this.#target;
    const key = resultKey(this.#target, file.path);
    const { signal } = this.#options;
    const created = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ChecksumAlgorithm: 'SHA256', Metadata: objectMetadata(file.sha256, 'direct') }), { abortSignal: signal });
    const uploadId = z.string().min(1).parse(created.UploadId);
    const parts: CompletedPart[] = [];
    try {
      const planned = partDigests.map((digest, i): Planned => {
        const checksum = Buffer.from(digest, 'hex').toString('base64');
        const headers = [['x-amz-checksum-sha256', checksum]] as const;
        const command = new UploadPartCommand({ Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: i + 1, ChecksumSHA256: checksum });
        const size = i < partCount({ size: file.size, partMiB }) - 1 ? partMiB * MIB : file.size - i * partMiB * MIB;
        return {
          file: { ...file, size }, what: `part ${i + 1} of ${printable(file.path)}`,
          upload: { path: file.path, range: { skipMiB: i * partMiB, countMiB: partMiB }, headers },
          presign: () => this.#presign(command, headers),
        };
      });
      const stop = await this.#runAll(planned, (index, etag) => {
        parts.push({ PartNumber: index + 1, ETag: etag, ChecksumSHA256: planned[index]?.upload.headers[0]?.[1] });
      });
      if (stop) {
        await this.#abortUpload(key, uploadId);
        return stop;
      }
      if (parts.length !== planned.length || parts.some((part) => !part.ETag)) throw new Error(`the pod reported no ETag for a part of ${printable(file.path)}`);
      // Batches run side by side: their parts arrive out of order, the store wants them ascending.
      parts.sort((a, b) => (a.PartNumber ?? 0) - (b.PartNumber ?? 0));
      await client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }), { abortSignal: signal });
      return undefined;
    } catch (error) {
      await this.#abortUpload(key, uploadId);
      throw error;
    }
  }

  /** Best effort, and never cut short by the run's signal: a dangling upload keeps its parts (and their cost). */
  async #abortUpload(key: string, uploadId: string): Promise<void> {
    await this.#target.client.send(new AbortMultipartUploadCommand({ Bucket: this.#target.bucket, Key: key, UploadId: uploadId })).catch(() => undefined);
  }

  #exec(command: string, timeoutMs: number, stdin?: string): Promise<ExecResult> {
    const { signal } = this.#options;
    return exec(this.#ssh, command, { timeoutMs: Math.ceil(timeoutMs), ...(stdin !== undefined ? { stdin } : {}), ...(signal ? { signal } : {}) });
  }
}

const bytesOf = (item: Planned | undefined): number => item?.file.size ?? 0;

const exitText = (result: ExecResult): string => (result.code !== null ? `exit code ${result.code}` : `signal ${result.signal ?? 'unknown'}`);

/** A pod command that did not run to its end: the directory, a missing tool (then stream instead), anything else. */
function commandProblem(result: ExecResult, dir: string, what: string): Stop | undefined {
  if (result.code === 0) return undefined;
  const stderr = printable(result.stderr.toString('utf8'));
  if (result.code === DIRECT_NO_DIR_EXIT) return { kind: 'failed', message: `${what}: directory ${printable(dir)} does not exist on the pod` };
  if (result.code === DIRECT_NO_TOOL_EXIT) return { kind: 'unreachable', message: `${what}: the pod cannot upload by itself: ${stderr}` };
  return { kind: 'failed', message: `${what} on the pod failed (${exitText(result)})${stderr ? `: ${stderr}` : ''}` };
}
