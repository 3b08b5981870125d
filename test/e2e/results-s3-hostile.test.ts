// What a run's author can make the controller do with spec.results.s3.endpoint, which is any URL: a
// store that answers every ListObjectsV2 "truncated, continue from the same token" does not wedge the
// transfer (the repeated token is an error, the try counted and said); a store whose error answer
// carries a long body (an internal service's page, its secrets) gets into the status only as its code
// and HTTP status, bounded. The endpoint is a small HTTP server of this test. Ends with the leak check.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { kubectl } from '../support/kubectl.ts';
import { runManifest, withWorld } from '../support/operator.ts';

const BODY_SECRET = 'internal-db-password-hunter2';
let server: Server;
let endpoint: string;
const listsOf = new Map<string, number>();

before(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://store');
    const bucket = url.pathname.split('/')[1] ?? '';
    req.resume();
    if (bucket === 'loop' && req.method === 'GET' && url.searchParams.get('list-type') === '2') {
      listsOf.set(bucket, (listsOf.get(bucket) ?? 0) + 1);
      res.writeHead(200, { 'Content-Type': 'application/xml' });
      res.end('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        + `<Name>loop</Name><Prefix>${url.searchParams.get('prefix') ?? ''}</Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys>`
        + '<IsTruncated>true</IsTruncated><NextContinuationToken>the-same-token</NextContinuationToken></ListBucketResult>');
      return;
    }
    // Everything else: a refusal whose message is a long page of an internal service.
    res.writeHead(403, { 'Content-Type': 'application/xml' });
    res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>${BODY_SECRET} ${'internal detail '.repeat(400)}</Message><RequestId>1</RequestId></Error>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => {
  server.closeAllConnections();
  server.close(() => resolve());
}));

const hostileRun = (name: string, bucket: string) => runManifest(name, {
  job: { command: ['sh', '-c', 'mkdir -p output && echo r > output/r.txt'] },
  results: { path: 'output', s3: { bucket, endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { secretName: 's3' } } },
  limits: { maxRuntimeSeconds: 600, readyTimeoutSeconds: 60, retrieveGraceSeconds: 120 },
});

test('a hostile store endpoint: endless paging and long error bodies end each try with a short, clear status, never a wedged transfer', () =>
  withWorld('s3hostile', async (world) => {
    const secret = await kubectl(['create', 'secret', 'generic', 's3', '-n', world.namespace,
      '--from-literal=AWS_ACCESS_KEY_ID=AKIAHOSTILETEST00000', '--from-literal=AWS_SECRET_ACCESS_KEY=hostile-test-secret-key-000000000000000']);
    assert.equal(secret.status, 0, secret.stderr);
    await world.apply(hostileRun('loop', 'loop'));
    await world.apply(hostileRun('leak', 'leak'));

    const loop = await world.waitForRun('loop', 'ResultsUnverified', (r) => r.status?.reason === 'ResultsUnverified' || r.status?.phase === 'Failed', 120_000);
    assert.equal(loop.status?.phase, 'Retrieving', JSON.stringify(loop.status));
    assert.match(loop.status?.message ?? '', /the object store s3:\/\/loop\/.*continuation token/);
    assert.ok((loop.status?.message ?? '').length <= 1024, `a bounded message: ${loop.status?.message?.length}`);
    const lists = listsOf.get('loop') ?? 0;
    assert.ok(lists <= 100, `the listing stopped at the repeated token: ${lists} ListObjectsV2 answered`);

    const leak = await world.waitForRun('leak', 'ResultsUnverified', (r) => r.status?.reason === 'ResultsUnverified' || r.status?.phase === 'Failed', 120_000);
    assert.equal(leak.status?.phase, 'Retrieving', JSON.stringify(leak.status));
    assert.match(leak.status?.message ?? '', /the object store s3:\/\/leak\/.*AccessDenied \(HTTP 403\)/);
    assert.ok(!(leak.status?.message ?? '').includes(BODY_SECRET), `no body text in the status: ${leak.status?.message}`);
    assert.ok((leak.status?.message ?? '').length <= 1024, `a bounded message: ${leak.status?.message?.length}`);

    const { healthUrl } = world.endpoints();
    assert.equal((await fetch(`${healthUrl}/healthz`)).status, 200, 'no transfer is stuck');
    await world.deleteRun('loop');
    await world.deleteRun('leak');
  }));
