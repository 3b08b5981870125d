// The RunpodRun CRD on a real API server, driven by the real kubectl: examples apply, bad manifests
// are rejected at apply time with the field named, and zod (the controller's check) agrees.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { parseAllDocuments, stringify } from 'yaml';
import { parseSpec } from '../../src/api/runpodrun.ts';
import { createTestNamespace } from '../support/cluster.ts';
import { kubectl } from '../support/kubectl.ts';

const examplesDir = join(import.meta.dirname, '..', '..', 'examples');

function validSpec(): Record<string, unknown> {
  return {
    credentials: { secretName: 'runpod' },
    image: 'runpod/base:0.6.2',
    gpu: { types: ['NVIDIA A40'] },
    job: {
      command: ['python', 'train.py'],
      env: [{ name: 'A', value: '1' }],
      files: [{ path: 'config.yaml', configMapKeyRef: { name: 'cfg', key: 'config.yaml' } }],
    },
    limits: { maxRuntimeSeconds: 600 },
  };
}

function runpodRun(name: string, spec: unknown): object {
  return { apiVersion: 'runpod-operator.dev/v1alpha1', kind: 'RunpodRun', metadata: { name }, spec };
}

function manifest(name: string, spec: unknown): string {
  return JSON.stringify(runpodRun(name, spec));
}

/** kubectl apply's errors, by the name of the object each is about (an error may span lines). */
function errorsByObject(stderr: string): Map<string, string> {
  const errors = new Map<string, string>();
  for (const error of stderr.split(/\n(?=\S)/)) {
    const name = /RunpodRun(?:\.[\w.-]+)? "([^"]+)"/.exec(error)?.[1];
    if (name !== undefined) errors.set(name, error);
  }
  return errors;
}

type Spec = Record<string, any>;

/** Each case breaks a valid spec in one way; `field` is what the error must name. */
const invalid: { name: string; field: string; mutate: (spec: Spec) => void }[] = [
  { name: 'missing image', field: 'spec.image', mutate: (s) => { delete s.image; } },
  { name: 'empty image', field: 'spec.image', mutate: (s) => { s.image = ''; } },
  { name: 'missing credentials', field: 'spec.credentials', mutate: (s) => { delete s.credentials; } },
  { name: 'bad secret name', field: 'spec.credentials.secretName', mutate: (s) => { s.credentials.secretName = 'Bad_Name'; } },
  { name: 'both gpu.types and gpu.auto', field: 'spec.gpu', mutate: (s) => { s.gpu.auto = { minVramGb: 24 }; } },
  { name: 'neither gpu.types nor gpu.auto', field: 'spec.gpu', mutate: (s) => { s.gpu = { count: 1 }; } },
  { name: 'empty gpu.types', field: 'spec.gpu.types', mutate: (s) => { s.gpu.types = []; } },
  { name: 'gpu.count above 8', field: 'spec.gpu.count', mutate: (s) => { s.gpu.count = 9; } },
  { name: 'malformed maxPricePerHour', field: 'spec.gpu.auto.maxPricePerHour', mutate: (s) => { s.gpu = { auto: { maxPricePerHour: '1,50' } }; } },
  { name: 'unknown cloud', field: 'spec.cloud', mutate: (s) => { s.cloud = 'PRIVATE'; } },
  { name: 'relative networkVolume mountPath', field: 'spec.networkVolume.mountPath', mutate: (s) => { s.networkVolume = { id: 'nv1', mountPath: 'data' }; s.dataCenterIds = ['EU-RO-1']; } },
  { name: 'retry.limit above 10', field: 'spec.retry.limit', mutate: (s) => { s.retry = { limit: 11 }; } },
  { name: 'retry.onExitCodes with 0', field: 'spec.retry.onExitCodes[0]', mutate: (s) => { s.retry = { limit: 1, onExitCodes: [0] }; } },
  { name: 'retry.onExitCodes above 255', field: 'spec.retry.onExitCodes[1]', mutate: (s) => { s.retry = { limit: 1, onExitCodes: [3, 256] }; } },
  { name: 'activeDeadlineSeconds below 30', field: 'spec.limits.activeDeadlineSeconds', mutate: (s) => { s.limits.activeDeadlineSeconds = 5; } },
  { name: 'empty job.command', field: 'spec.job.command', mutate: (s) => { s.job.command = []; } },
  { name: 'missing job', field: 'spec.job', mutate: (s) => { delete s.job; } },
  { name: 'absolute job.files path', field: 'spec.job.files[0].path', mutate: (s) => { s.job.files[0].path = '/etc/passwd'; } },
  { name: '".." in job.files path', field: 'spec.job.files[0].path', mutate: (s) => { s.job.files[0].path = 'a/../../etc/passwd'; } },
  { name: 'job.files with two sources', field: 'spec.job.files[0]', mutate: (s) => { s.job.files[0].secretKeyRef = { name: 'x', key: 'y' }; } },
  { name: 'absolute results.path', field: 'spec.results.path', mutate: (s) => { s.results = { path: '/root' }; } },
  { name: '".." in results.path', field: 'spec.results.path', mutate: (s) => { s.results = { path: '..' }; } },
  // .pod is reserved (the pod's state directory of earlier versions; the state is now on the container's disk).
  { name: 'job.files into the state directory', field: 'spec.job.files[0].path', mutate: (s) => { s.job.files[0].path = '.pod/retrieved'; } },
  { name: 'job.files into the state directory via ./', field: 'spec.job.files[0].path', mutate: (s) => { s.job.files[0].path = './/.pod/keep'; } },
  { name: 'job.files as the state directory itself', field: 'spec.job.files[0].path', mutate: (s) => { s.job.files[0].path = '.pod'; } },
  { name: 'results.path is the state directory', field: 'spec.results.path', mutate: (s) => { s.results = { path: '.pod' }; } },
  { name: 'results.path inside the state directory', field: 'spec.results.path', mutate: (s) => { s.results = { path: './.pod/x' }; } },
  { name: 'results.path is the run directory (holds the job\'s inputs)', field: 'spec.results.path', mutate: (s) => { s.results = { path: '.' }; } },
  { name: 'results.path is the run directory, spelled ./.', field: 'spec.results.path', mutate: (s) => { s.results = { path: './.' }; } },
  { name: 'malformed results.maxBytes', field: 'spec.results.maxBytes', mutate: (s) => { s.results = { maxBytes: '100GB' }; } },
  { name: 'results.s3 without a bucket', field: 'spec.results.s3.bucket', mutate: (s) => { s.results = { s3: {} }; } },
  { name: 'results.s3 bucket with capitals', field: 'spec.results.s3.bucket', mutate: (s) => { s.results = { s3: { bucket: 'ML-Results' } }; } },
  { name: 'results.s3 bucket with ".."', field: 'spec.results.s3.bucket', mutate: (s) => { s.results = { s3: { bucket: 'ml..results' } }; } },
  { name: 'results.s3 bucket like an IP address', field: 'spec.results.s3.bucket', mutate: (s) => { s.results = { s3: { bucket: '192.168.1.1' } }; } },
  { name: 'absolute results.s3 prefix', field: 'spec.results.s3.prefix', mutate: (s) => { s.results = { s3: { bucket: 'ml-results', prefix: '/team-a/' } }; } },
  { name: 'results.s3 prefix without a trailing "/"', field: 'spec.results.s3.prefix', mutate: (s) => { s.results = { s3: { bucket: 'ml-results', prefix: 'team-a' } }; } },
  { name: '".." in results.s3 prefix', field: 'spec.results.s3.prefix', mutate: (s) => { s.results = { s3: { bucket: 'ml-results', prefix: 'team-a/../' } }; } },
  { name: 'results.s3 endpoint not http(s)', field: 'spec.results.s3.endpoint', mutate: (s) => { s.results = { s3: { bucket: 'ml-results', endpoint: 'ftp://store:21' } }; } },
  { name: 'results.s3 credentials without secretName', field: 'spec.results.s3.credentials.secretName', mutate: (s) => { s.results = { s3: { bucket: 'ml-results', credentials: {} } }; } },
  { name: 'unknown results.s3 field', field: 'spec.results.s3.secretKey', mutate: (s) => { s.results = { s3: { bucket: 'ml-results', secretKey: 'x' } }; } },
  { name: 'bad env var name', field: 'spec.job.env[0].name', mutate: (s) => { s.job.env[0].name = '1BAD-NAME'; } },
  { name: 'env var with value and valueFrom', field: 'spec.job.env[0]', mutate: (s) => { s.job.env[0].valueFrom = { secretKeyRef: { name: 'hf', key: 'token' } }; } },
  { name: 'env valueFrom with two refs', field: 'spec.job.env[0].valueFrom', mutate: (s) => { s.job.env[0] = { name: 'A', valueFrom: { secretKeyRef: { name: 'a', key: 'b' }, configMapKeyRef: { name: 'c', key: 'd' } } }; } },
  { name: 'duplicate env var names', field: 'spec.job.env', mutate: (s) => { s.job.env.push({ name: 'A', value: '2' }); } },
  { name: 'missing maxRuntimeSeconds', field: 'spec.limits.maxRuntimeSeconds', mutate: (s) => { s.limits = {}; } },
  { name: 'maxRuntimeSeconds below 30', field: 'spec.limits.maxRuntimeSeconds', mutate: (s) => { s.limits.maxRuntimeSeconds = 29; } },
  { name: 'maxRuntimeSeconds above 720 h', field: 'spec.limits.maxRuntimeSeconds', mutate: (s) => { s.limits.maxRuntimeSeconds = 2_592_001; } },
  { name: 'maxRuntimeSeconds as a string', field: 'spec.limits.maxRuntimeSeconds', mutate: (s) => { s.limits.maxRuntimeSeconds = '600'; } },
  { name: 'malformed maxCostUsd', field: 'spec.limits.maxCostUsd', mutate: (s) => { s.limits.maxCostUsd = '$25'; } },
  { name: 'zero maxCostUsd', field: 'spec.limits.maxCostUsd', mutate: (s) => { s.limits.maxCostUsd = '0.00'; } },
  { name: 'queueTimeoutSeconds above 7 days', field: 'spec.limits.queueTimeoutSeconds', mutate: (s) => { s.limits.queueTimeoutSeconds = 604_801; } },
  { name: 'negative queueTimeoutSeconds', field: 'spec.limits.queueTimeoutSeconds', mutate: (s) => { s.limits.queueTimeoutSeconds = -1; } },
  { name: 'unknown spec field', field: 'spec.gpuType', mutate: (s) => { s.gpuType = 'NVIDIA A40'; } },
];

let namespace: string;
before(async () => { namespace = await createTestNamespace('crd'); });

describe('RunpodRun CRD', () => {
  test('every manifest in examples/ applies cleanly', async () => {
    for (const file of readdirSync(examplesDir).filter((f) => f.endsWith('.yaml'))) {
      const text = readFileSync(join(examplesDir, file), 'utf8');
      const result = await kubectl(['apply', '-n', namespace, '-f', '-'], text);
      assert.equal(result.status, 0, `${file}: ${result.stderr}`);
      for (const doc of parseAllDocuments(text).map((d) => d.toJS() as { kind: string; spec: unknown })) {
        if (doc.kind === 'RunpodRun') assert.deepEqual(parseSpec(doc.spec).ok, true, `${file}: zod rejects it: ${JSON.stringify(parseSpec(doc.spec))}`);
      }
    }
  });

  test(`${invalid.length} invalid manifests are rejected at apply time, naming the field, and zod agrees`, async () => {
    assert.ok(invalid.length >= 20);
    const cases = invalid.map((testCase, index) => {
      const spec = validSpec();
      testCase.mutate(spec);
      return { ...testCase, object: `invalid-${index}`, spec };
    });
    // One kubectl for them all (a kubectl is some 0.2 s of CPU): apply goes on past each object the API
    // server refuses and names it in that object's error.
    const documents = cases.map(({ object, spec }) => stringify(runpodRun(object, spec))).join('---\n');
    const result = await kubectl(['apply', '-n', namespace, '-f', '-'], documents);
    assert.notEqual(result.status, 0, 'the API server accepted them all');
    assert.equal(result.stdout.trim(), '', 'none of them is created');
    const errors = errorsByObject(result.stderr);
    for (const testCase of cases) {
      // A strict-decoding error (an unknown field) does not name its object: that case is applied alone.
      const error = errors.get(testCase.object) ?? (await kubectl(['apply', '-n', namespace, '-f', '-'], manifest(testCase.object, testCase.spec))).stderr;
      assert.ok(error.includes(testCase.field), `${testCase.name}: the error does not name ${testCase.field}: ${error}`);
      const verdict = parseSpec(testCase.spec);
      assert.equal(verdict.ok, false, `${testCase.name}: zod accepts what the API server rejects`);
      if (!verdict.ok) assert.ok(verdict.message.includes(testCase.field), `${testCase.name}: zod does not name ${testCase.field}: ${verdict.message}`);
    }
  });

  test('the valid base spec is accepted by both, and defaults agree', async () => {
    const result = await kubectl(['apply', '-n', namespace, '-f', '-'], manifest('valid-base', validSpec()));
    assert.equal(result.status, 0, result.stderr);
    const stored = JSON.parse((await kubectl(['get', '-n', namespace, 'rpr', 'valid-base', '-o', 'json'])).stdout) as { spec: unknown };
    const verdict = parseSpec(validSpec());
    assert.ok(verdict.ok);
    // The API server's defaulting and zod's must produce the same spec.
    assert.deepEqual(stored.spec, verdict.spec);
  });

  test('a networkVolume without dataCenterIds is accepted by both (its data center comes from Runpod)', async () => {
    const spec = { ...validSpec(), networkVolume: { id: 'nv1', mountPath: '/workspace/ckpt' } };
    const result = await kubectl(['apply', '-n', namespace, '-f', '-'], manifest('volume-only', spec));
    assert.equal(result.status, 0, result.stderr);
    assert.ok(parseSpec(spec).ok);
  });

  test('a run no controller has written yet reads "generation 0 observed" (kstatus takes no status at all for Current)', async () => {
    assert.equal((await kubectl(['apply', '-n', namespace, '-f', '-'], manifest('unobserved', validSpec()))).status, 0);
    const stored = JSON.parse((await kubectl(['get', '-n', namespace, 'rpr', 'unobserved', '-o', 'json'])).stdout);
    assert.equal(stored.metadata.generation, 1);
    assert.deepEqual(stored.status, { observedGeneration: 0 });
  });

  test('runs can be selected by status.phase and status.reason (kubectl delete rpr --field-selector status.phase=Succeeded)', async () => {
    const setStatus = (name: string, status: object) =>
      kubectl(['patch', '-n', namespace, 'rpr', name, '--subresource=status', '--type', 'merge', '-p', JSON.stringify({ status })]);
    for (const name of ['done-ok', 'done-cancelled', 'still-running']) {
      assert.equal((await kubectl(['apply', '-n', namespace, '-f', '-'], manifest(name, validSpec()))).status, 0);
    }
    assert.equal((await setStatus('done-ok', { observedGeneration: 1, phase: 'Succeeded', reason: 'Succeeded' })).status, 0);
    assert.equal((await setStatus('done-cancelled', { observedGeneration: 1, phase: 'Failed', reason: 'Cancelled' })).status, 0);
    assert.equal((await setStatus('still-running', { observedGeneration: 1, phase: 'Running', reason: 'JobRunning' })).status, 0);
    const names = async (selector: string) => {
      const result = await kubectl(['get', '-n', namespace, 'rpr', '--field-selector', selector, '-o', 'name']);
      assert.equal(result.status, 0, result.stderr);
      return result.stdout.trim().split('\n').filter(Boolean).sort();
    };
    assert.deepEqual(await names('status.phase=Succeeded'), ['runpodrun.runpod-operator.dev/done-ok']);
    assert.deepEqual(await names('status.reason=Cancelled'), ['runpodrun.runpod-operator.dev/done-cancelled']);
    const deleted = await kubectl(['delete', '-n', namespace, 'rpr', '--field-selector', 'status.phase=Succeeded']);
    assert.equal(deleted.status, 0, deleted.stderr);
    assert.match(deleted.stdout, /done-ok.*deleted/);
    assert.equal((await kubectl(['get', '-n', namespace, 'rpr', 'still-running'])).status, 0, 'a running run is not selected');
  });

  test('the spec is immutable but for keepPod and cancel; cancel cannot be undone', async () => {
    assert.equal((await kubectl(['apply', '-n', namespace, '-f', '-'], manifest('immutable', validSpec()))).status, 0);
    const patch = async (spec: object) =>
      kubectl(['patch', '-n', namespace, 'rpr', 'immutable', '--type', 'merge', '-p', JSON.stringify({ spec })]);
    for (const [field, change] of [['spec.image', { image: 'other:1' }], ['spec.limits', { limits: { maxRuntimeSeconds: 700 } }],
      ['spec.dataCenterIds', { dataCenterIds: ['EU-RO-1'] }], ['spec.job', { job: { command: ['true'] } }]] as const) {
      const result = await patch(change);
      assert.notEqual(result.status, 0, `${field} change was accepted`);
      assert.match(result.stderr, new RegExp(`${field.replace('.', '\\.')}.*is immutable`));
    }
    assert.equal((await patch({ keepPod: true })).status, 0);
    assert.equal((await patch({ cancel: true })).status, 0);
    const undo = await patch({ cancel: false });
    assert.notEqual(undo.status, 0);
    assert.match(undo.stderr, /spec\.cancel.*cannot be undone/);
  });

  test('server-side apply (as Argo CD and Flux use it) creates, re-applies unchanged and changes keepPod', async () => {
    const apply = (spec: object) => kubectl(['apply', '--server-side', '--field-manager=gitops', '-n', namespace, '-f', '-'], manifest('ssa', spec));
    assert.equal((await apply(validSpec())).status, 0);
    const unchanged = await apply(validSpec());
    assert.equal(unchanged.status, 0, unchanged.stderr);
    const generation = JSON.parse((await kubectl(['get', '-n', namespace, 'rpr', 'ssa', '-o', 'json'])).stdout).metadata.generation;
    assert.equal(generation, 1, 'a re-apply of the same manifest changes nothing');
    assert.equal((await apply({ ...validSpec(), keepPod: true })).status, 0);
    const changed = await apply({ ...validSpec(), image: 'other:2' });
    assert.notEqual(changed.status, 0);
    assert.match(changed.stderr, /spec\.image.*is immutable/);
  });

  test('kubectl get rpr prints the columns (RETRIES too), -o wide adds deadline, data center and exit', async () => {
    assert.equal((await kubectl(['apply', '-n', namespace, '-f', '-'], manifest('columns', validSpec()))).status, 0);
    const header = (args: string[]) => kubectl(['get', '-n', namespace, 'rpr', 'columns', ...args])
      .then((r) => r.stdout.split('\n')[0]?.trim().split(/\s+/));
    assert.deepEqual(await header([]), ['NAME', 'PHASE', 'REASON', 'GPU', 'POD', '$/HR', 'COST', 'RETRIES', 'AGE']);
    assert.deepEqual(await header(['-o', 'wide']), ['NAME', 'PHASE', 'REASON', 'GPU', 'POD', '$/HR', 'COST', 'RETRIES', 'AGE', 'DEADLINE', 'DATACENTER', 'EXIT']);
    const short = await kubectl(['get', '-n', namespace, 'runpod']);
    assert.match(short.stdout, /^columns\s/m, 'the category "runpod" lists it');
  });
});
