// The direct path's pod commands run here for real under dash and bash --posix (no pod: the pod
// tests' shells), against a real SeaweedFS with presigned URLs: what they print, where they stop,
// and that the part hashes are the bytes' own.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import {
  DIRECT_NO_TOOL_EXIT, DIRECT_SHORT_INPUT_EXIT, parsePartHashes, parseUploadOutput, partHashCommand, uploadCommand, uploadStdin, type PodUpload,
} from '../../src/results/s3-direct-pod.ts';
import { SHELLS, runShell } from '../pod/helpers.ts';
import { startObjectStore, type ObjectStore } from './seaweedfs.ts';

const BUCKET = 'direct-commands';
const MIB = 1024 * 1024;
// A tab a quoted curl config string holds as it is; the last three it cannot (a quote, a backslash, a newline).
const NAMES = ['a b.txt', '-n', '[x]{y}*', "it's", 'a\ttab.txt', 'say "hi".txt', 'c:\\dir.txt', 'two\nlines.txt'];

describe('the direct path\'s pod commands', () => {
  let store: ObjectStore;
  let s3: S3Client;
  let dir: string;
  const env = (): NodeJS.ProcessEnv => ({ ...process.env, TMPDIR: dir });
  const shellsOnly = (): string => `${dir}-bin`;
  const oldCurl = (): string => `${dir}-old-curl`;

  before(async () => {
    store = await startObjectStore();
    s3 = store.client();
    await store.createBucket(BUCKET);
    dir = mkdtempSync(join(tmpdir(), 'rpo-s3-direct-'));
    for (const name of NAMES) writeFileSync(join(dir, name), `the bytes of ${name}\n`);
    writeFileSync(join(dir, 'big'), Buffer.alloc(12 * MIB + 1, 'abcdefgh'));
    // A PATH with the shells only (no curl), outside the results directory.
    mkdirSync(shellsOnly());
    for (const shell of ['dash', 'bash']) symlinkSync(`/bin/${shell}`, join(shellsOnly(), shell));
    // A curl older than 7.76 (Ubuntu 20.04's 7.68, in many CUDA images): no --fail-with-body.
    mkdirSync(oldCurl());
    const real = (await runShell('dash', 'command -v curl')).stdout.trim();
    writeFileSync(join(oldCurl(), 'curl'), [
      '#!/bin/sh',
      'for a do [ "$a" = --fail-with-body ] && { echo "curl: option --fail-with-body: is unknown" >&2; exit 2; }; done',
      `if [ "$1" = --help ]; then ${real} "$@" | grep -v -- --fail-with-body; exit 0; fi`,
      `exec ${real} "$@"`,
    ].join('\n'), { mode: 0o755 });
  });

  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(shellsOnly(), { recursive: true, force: true });
    rmSync(oldCurl(), { recursive: true, force: true });
    s3?.destroy();
    await store?.stop();
  });

  const hex = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');
  /** A presigned PUT of `path` signed for `content` (its own bytes unless told otherwise). */
  async function upload(key: string, path: string, content = readFileSync(join(dir, path))): Promise<PodUpload> {
    const checksum = Buffer.from(hex(content), 'hex').toString('base64');
    const url = await getSignedUrl(s3, new PutObjectCommand({ Bucket: BUCKET, Key: key, ChecksumSHA256: checksum, Metadata: { sha256: hex(content) } }), {
      expiresIn: 300, unhoistableHeaders: new Set(['x-amz-checksum-sha256', 'x-amz-meta-sha256']),
    });
    return { path, url, headers: [['x-amz-checksum-sha256', checksum], ['x-amz-meta-sha256', hex(content)]] };
  }

  for (const shell of SHELLS) {
    test(`${shell}: every file PUT with its signed headers, one ok line each (file names are never interpreted)`, async () => {
      const uploads = await Promise.all(NAMES.map((name, i) => upload(`${shell}/ok/${i}`, name)));
      const result = await runShell(shell, uploadCommand(dir, uploads), { stdin: uploadStdin(uploads), env: env() });
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stderr, '');
      const reports = parseUploadOutput(result.stdout, uploads.length);
      assert.deepEqual(reports.map((report) => [report.ok, report.http]), NAMES.map(() => [true, 200]));
      for (const [i, name] of NAMES.entries()) {
        const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${shell}/ok/${i}`, ChecksumMode: 'ENABLED' }));
        assert.equal(head.Metadata?.sha256, hex(readFileSync(join(dir, name))));
        const report = reports[i];
        assert.ok(report?.ok);
        // Only a part's ETag is used (its CompleteMultipartUpload, direct.test.ts): a whole file reports none.
        assert.equal(report.etag, undefined);
      }
      // Its private directory (the signed headers, the answers) is gone with it.
      assert.deepEqual(readdirSync(dir).filter((entry) => entry.startsWith('runpod-operator-s3.')), []);
    });

    for (const [curl, failExit] of [['curl', 22], ['a curl without --fail-with-body', 0]] as const) {
      test(`${shell}, ${curl}: the first refused upload stops the batch and reports the store's code only`, async () => {
        const at = `${shell}/${failExit}/stop`;
        const uploads = [await upload(`${at}/0`, 'a b.txt'), await upload(`${at}/1`, '-n', Buffer.from('other bytes')), await upload(`${at}/2`, "it's")];
        const path = failExit === 0 ? { PATH: `${oldCurl()}:${process.env.PATH ?? ''}` } : {};
        const result = await runShell(shell, uploadCommand(dir, uploads), { stdin: uploadStdin(uploads), env: { ...env(), ...path } });
        assert.equal(result.code, 0, result.stderr);
        const reports = parseUploadOutput(result.stdout, uploads.length);
        assert.deepEqual(reports.map((report) => (report.ok ? ['ok', report.http] : ['fail', report.http, report.curlExit, report.code])), [
          ['ok', 200], ['fail', 400, failExit, 'BadDigest'],
        ]);
        await assert.rejects(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${at}/1` })), { name: 'NotFound' });
        await assert.rejects(s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${at}/2` })), { name: 'NotFound' });
      });
    }

    test(`${shell}: the part hashes and the whole file's, as the bytes say`, async () => {
      const bytes = readFileSync(join(dir, 'big'));
      const files = [{ path: 'big', size: bytes.length, partMiB: 5 }, { path: 'a b.txt', size: 20, partMiB: 5 }];
      const result = await runShell(shell, partHashCommand(dir, files), { env: env() });
      assert.equal(result.code, 0, result.stderr);
      assert.deepEqual(parsePartHashes(result.stdout, files), [
        { parts: [hex(bytes.subarray(0, 5 * MIB)), hex(bytes.subarray(5 * MIB, 10 * MIB)), hex(bytes.subarray(10 * MIB))], whole: hex(bytes) },
        { parts: [hex(readFileSync(join(dir, 'a b.txt')))], whole: hex(readFileSync(join(dir, 'a b.txt'))) },
      ]);
    });

    test(`${shell}: a short stdin and a pod without curl are their own exits`, async () => {
      const uploads = [await upload(`${shell}/short/0`, 'a b.txt'), await upload(`${shell}/short/1`, '-n')];
      const short = await runShell(shell, uploadCommand(dir, uploads), { stdin: uploadStdin(uploads.slice(0, 1)), env: env() });
      assert.equal(short.code, DIRECT_SHORT_INPUT_EXIT, short.stderr);
      // Whole files go to one curl once every URL is read: an input cut short uploads none of them.
      assert.equal(parseUploadOutput(short.stdout, 2).length, 0);
      const noCurl = await runShell(shell, uploadCommand(dir, uploads), { stdin: uploadStdin(uploads), env: { ...env(), PATH: shellsOnly() } });
      assert.equal(noCurl.code, DIRECT_NO_TOOL_EXIT);
      assert.match(noCurl.stderr, /curl not found/);
    });
  }
});
