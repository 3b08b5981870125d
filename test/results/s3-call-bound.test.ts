// Every store call is bounded, however the endpoint trickles its answer (issue 18 §6): the endpoint is
// any URL a run names, and before the bound a ListObjectsV2 answered one byte at a time, each within
// the SDK's socket timeout, held its retrieval (and a transfer slot) for as long as the endpoint liked.
// A real HTTP server and the real SDK; the bound is compressed (60 s + the body at 1 MiB/s in production).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { S3CallTimeoutError } from '../../src/results/s3-errors.ts';
import { s3TargetFor } from '../../src/results/s3-store.ts';

let server: Server;
let endpoint: string;
const trickles = new Set<NodeJS.Timeout>();

before(async () => {
  // Answers 200 at once, then one byte of XML every 100 ms, forever: never a complete answer, never idle.
  server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/xml' });
    res.write('<?xml version="1.0" encoding="UTF-8"?>');
    const timer = setInterval(() => res.write(' '), 100);
    trickles.add(timer);
    res.on('close', () => { clearInterval(timer); trickles.delete(timer); });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  for (const timer of trickles) clearInterval(timer);
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const target = (onProgress: () => void) => s3TargetFor(
  { bucket: 'b', keyPrefix: 'p/', endpoint, forcePathStyle: true },
  { accessKeyId: 'test-access', secretAccessKey: 'test-secret' },
  onProgress,
  { baseMs: 1000, minBytesPerSecond: 512 * 1024 },
);

void test('a trickled answer ends the call with S3CallTimeoutError at its bound, and the call counts as progress', async () => {
  let beats = 0;
  const { client } = target(() => beats++);
  const started = Date.now();
  try {
    await assert.rejects(client.send(new ListObjectsV2Command({ Bucket: 'b', Prefix: 'p/' })), (error: unknown) => {
      assert.ok(error instanceof S3CallTimeoutError, String(error));
      assert.equal(error.message, 'ListObjectsV2 got no complete answer within 1 s');
      return true;
    });
  } finally {
    client.destroy();
  }
  const tookMs = Date.now() - started;
  assert.ok(tookMs >= 1000 && tookMs < 10_000, `ended after ${tookMs} ms`);
  assert.equal(beats, 1, 'the ended call beat once');
});

void test('the bound grows with the body: a 1 MiB PUT at 512 KiB/s may take 1 s + 2 s', async () => {
  const { client } = target(() => undefined);
  const started = Date.now();
  try {
    await assert.rejects(client.send(new PutObjectCommand({ Bucket: 'b', Key: 'p/f', Body: Buffer.alloc(1024 * 1024) })),
      (error: unknown) => error instanceof S3CallTimeoutError && error.message === 'PutObject got no complete answer within 3 s');
  } finally {
    client.destroy();
  }
  assert.ok(Date.now() - started >= 3000, 'not before its bound');
});
