// `kubectl runpod results RUN [DIR]`: the run's verified results from its S3 store, checked against
// the SHA256SUMS the controller wrote after verifying them: each file OK, or the first that differs
// (exit 1). Credentials: the run's own results Secret when you may read it, else yours (the AWS chain).
// A run on the controller's directory store: one sentence saying where its results are.
import { createHash } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { parseSpec, type RunpodRun } from '../api/runpodrun.ts';
import { manifestPathProblem } from '../ssh/index.ts';
import { getRun, type Target } from './cluster.ts';
import { PluginError } from './errors.ts';

export async function results(target: Target, name: string, dir: string, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<number> {
  const run = await getRun(target, name);
  const location = run.status?.results?.location;
  if (!run.status?.results?.retrievedAt || !location) {
    throw new PluginError(`run "${name}" has no verified results${run.status?.message ? ` (${run.status.phase ?? ''}: ${run.status.message})` : ''}`);
  }
  const s3 = /^s3:\/\/([^/]+)\/(.*)$/.exec(location);
  if (!s3) throw new PluginError(`the results of run "${name}" are on the controller's results volume (the directory store), at ${location}: copy them from the controller's pod (kubectl cp)`);
  const [, bucket = '', keyPrefix = ''] = s3;
  const client = new S3Client({ ...(await s3Options(target, run, err)), maxAttempts: 3 });
  try {
    const sums = await objectText(client, bucket, `${keyPrefix}SHA256SUMS`, name);
    const entries = parseSums(sums);
    let checked = 0;
    for (const { sha256, path } of entries) {
      const file = join(resolve(dir), path);
      const actual = await download(client, bucket, `${keyPrefix}${path}`, file, name);
      if (actual !== sha256) {
        out.write(`${path}: FAILED\n`);
        throw new PluginError(`${path} differs from what the controller verified (sha256 ${actual}, SHA256SUMS says ${sha256}): the results in s3://${bucket}/${keyPrefix} changed since`);
      }
      out.write(`${path}: OK\n`);
      checked += 1;
    }
    out.write(`${checked} file${checked === 1 ? '' : 's'} verified against SHA256SUMS in ${resolve(dir)}\n`);
    return 0;
  } finally {
    client.destroy();
  }
}

/** The bucket's endpoint and addressing from the run's spec; its Secret's keys when the user may read them. */
async function s3Options(target: Target, run: RunpodRun, err: NodeJS.WritableStream): Promise<ConstructorParameters<typeof S3Client>[0]> {
  const parsed = parseSpec(run.spec);
  const own = parsed.ok ? parsed.spec.results.s3 : undefined;
  const options: ConstructorParameters<typeof S3Client>[0] = {
    region: own?.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
    ...(own?.endpoint ? { endpoint: own.endpoint } : {}),
    ...(own?.forcePathStyle ? { forcePathStyle: true } : {}),
  };
  const secretName = own?.credentials?.secretName;
  if (!secretName) return options;
  try {
    const data = (await target.kubeConfig.makeApiClient(CoreV1Api).readNamespacedSecret({ name: secretName, namespace: target.namespace })).data ?? {};
    const read = (key: string): string | undefined => (data[key] ? Buffer.from(data[key], 'base64').toString('utf8').trim() : undefined);
    const [accessKeyId, secretAccessKey, sessionToken] = [read('AWS_ACCESS_KEY_ID'), read('AWS_SECRET_ACCESS_KEY'), read('AWS_SESSION_TOKEN')];
    if (accessKeyId && secretAccessKey) return { ...options, credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } };
  } catch {
    // Not readable with the user's RBAC: their own credentials it is.
  }
  err.write(`using your own AWS credentials (the run's Secret ${secretName} is not readable to you)\n`);
  return options;
}

interface SumsEntry { sha256: string; path: string }

/** sha256sum's format (a leading "\" escapes \\, \n and \r in the name); every path must stay inside DIR. */
export function parseSums(text: string): SumsEntry[] {
  return text.split('\n').filter((line) => line !== '').map((line) => {
    const escaped = line.startsWith('\\');
    const match = /^([0-9a-f]{64}) [ *](.+)$/.exec(escaped ? line.slice(1) : line);
    if (!match) throw new PluginError(`SHA256SUMS has a line that is not "<sha256>  <path>": ${JSON.stringify(line.slice(0, 120))}`);
    const [, sha256 = '', raw = ''] = match;
    const path = escaped ? raw.replace(/\\(\\|n|r)/g, (_, c: string) => (c === 'n' ? '\n' : c === 'r' ? '\r' : '\\')) : raw;
    const problem = manifestPathProblem(path);
    if (problem) throw new PluginError(`SHA256SUMS names ${JSON.stringify(path)}, which is refused (${problem})`);
    return { sha256, path };
  });
}

async function objectText(client: S3Client, bucket: string, key: string, run: string): Promise<string> {
  try {
    const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return await answer.Body?.transformToString('utf8') ?? '';
  } catch (error) {
    throw new PluginError(`cannot read s3://${bucket}/${key} (the results of run "${run}"): ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The object written to `file` as it streams, hashed on the way; its sha256. */
async function download(client: S3Client, bucket: string, key: string, file: string, run: string): Promise<string> {
  let body;
  try {
    body = (await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body;
  } catch (error) {
    throw new PluginError(`cannot read s3://${bucket}/${key} (a result of run "${run}"): ${error instanceof Error ? error.message : String(error)}`);
  }
  mkdirSync(dirname(file), { recursive: true });
  const hash = createHash('sha256');
  const hashing = new Transform({ transform(chunk: Buffer, _encoding, done) { hash.update(chunk); done(null, chunk); } });
  await pipeline(body as NodeJS.ReadableStream, hashing, createWriteStream(file));
  return hash.digest('hex');
}
