// Network volumes (openapi-v2.json /v2/network-volumes; API-NOTES 2026-12 addendum part 2): create,
// read, rename, grow, delete and their refusals; volumes preset in the config; a pod that mounts one
// is placed in its data center or refused; pods naming one volume share its files.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertNoLeaks, podLogUntil } from './client.ts';
import { parseConfig } from './config.ts';
import { CAPACITY_DETAIL } from './problems.ts';
import { createSimVolume } from './resources-client.ts';
import { startSimulator, type RunningSimulator, type SimConfigInput } from './server.ts';
import { call, field, shArgs } from './testkit.ts';

const KEY = 'sim-test-account-key-volumes';
const OTHER = 'sim-test-account-key-volumes-other';
const PODS_ONLY = 'sim-test-account-key-volumes-pods-only';
const GPU = 'NVIDIA GeForce RTX 4090';

const CONFIG: SimConfigInput = {
  rateLimits: { enabled: false },
  gpuTypes: [{ id: GPU, displayName: 'RTX 4090', memoryInGb: 24, pricePerHour: 0.69, stock: { 'EU-RO-1': 8, 'US-TX-3': 8 } }],
  dataCenters: [
    { id: 'EU-RO-1', name: 'EU Romania 1', networkVolumeTypes: ['STANDARD'] },
    { id: 'US-TX-3', name: 'US Texas 3', networkVolumeTypes: ['STANDARD', 'HIGH_PERFORMANCE'] },
    { id: 'CA-MTL-1', name: 'CA Montreal 1', networkVolumeTypes: [] },
  ],
  networkVolumes: [
    { id: 'vol-preset-us', name: 'preset', size: 20, dataCenter: 'US-TX-3' },
    { id: 'vol-of-other', name: 'theirs', size: 10, dataCenter: 'EU-RO-1', type: 'STANDARD', owner: OTHER },
  ],
  keys: [{ key: PODS_ONLY, scopes: ['pods:read', 'pods:write'] }],
};

const podBody = (name: string, volumeId: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  name, image: 'runpod/base:sim', gpu: { id: GPU }, mounts: { network: [{ volumeId, path: '/workspace' }] }, ...extra,
});

describe('network volumes', () => {
  let sim: RunningSimulator;

  before(async () => {
    sim = await startSimulator({ apiKeys: [KEY, OTHER], config: CONFIG });
  });

  after(async () => {
    await sim.stop();
  });

  test('create, read, rename, grow, delete; another account sees none of it', async () => {
    const created = await call(sim, 'POST', '/v2/network-volumes', { key: KEY, body: { name: 'data', size: 50, dataCenter: 'US-TX-3' } });
    assert.equal(created.status, 201);
    const id = String(field(created.body, 'id'));
    assert.match(id, /^[a-z0-9]{10}$/);
    // The data center's first tier when none is asked for.
    assert.deepEqual(created.body, { id, name: 'data', size: 50, dataCenter: 'US-TX-3', type: 'STANDARD' });
    const fast = await createSimVolume(sim.baseUrl, KEY, { name: 'fast', size: 10, dataCenter: 'US-TX-3', type: 'HIGH_PERFORMANCE' });
    assert.equal(fast.type, 'HIGH_PERFORMANCE');

    const listed = await call(sim, 'GET', '/v2/network-volumes', { key: KEY });
    assert.equal(listed.status, 200);
    assert.deepEqual((field(listed.body, 'networkVolumes') as { id: string }[]).map((volume) => volume.id).sort(), [id, fast.id, 'vol-preset-us'].sort());
    assert.deepEqual((await call(sim, 'GET', `/v2/network-volumes/${id}`, { key: KEY })).body, created.body);
    assert.equal((await call(sim, 'GET', `/v2/network-volumes/${id}`, { key: OTHER })).status, 404);
    assert.equal((await call(sim, 'DELETE', `/v2/network-volumes/${id}`, { key: OTHER })).status, 404);

    const renamed = await call(sim, 'PATCH', `/v2/network-volumes/${id}`, { key: KEY, body: { name: 'data-2' } });
    assert.deepEqual([renamed.status, field(renamed.body, 'name'), field(renamed.body, 'size')], [200, 'data-2', 50]);
    const grown = await call(sim, 'PATCH', `/v2/network-volumes/${id}`, { key: KEY, body: { size: 200 } });
    assert.deepEqual([grown.status, field(grown.body, 'size')], [200, 200]);
    assert.equal((await call(sim, 'PATCH', `/v2/network-volumes/${id}`, { key: KEY, body: { size: 200 } })).status, 200);
    const shrunk = await call(sim, 'PATCH', `/v2/network-volumes/${id}`, { key: KEY, body: { size: 100 } });
    assert.equal(shrunk.status, 400);
    assert.match(String(field(shrunk.body, 'detail')), /only grow/);
    const nothing = await call(sim, 'PATCH', `/v2/network-volumes/${id}`, { key: KEY, body: {} });
    assert.deepEqual([nothing.status, field(nothing.body, 'errors')], [422, ['$: minProperties: want 1']]);
    assert.equal((await call(sim, 'PATCH', `/v2/network-volumes/${id}`, { key: KEY, body: { dataCenter: 'EU-RO-1' } })).status, 422);
    assert.equal((await call(sim, 'PATCH', '/v2/network-volumes/nope', { key: KEY, body: { name: 'x' } })).status, 404);

    assert.equal((await call(sim, 'DELETE', `/v2/network-volumes/${id}`, { key: KEY })).status, 204);
    const gone = await call(sim, 'GET', `/v2/network-volumes/${id}`, { key: KEY });
    assert.deepEqual(gone.body, { title: 'Not Found', status: 404, detail: 'resource not found' });
    assert.equal((await call(sim, 'DELETE', `/v2/network-volumes/${id}`, { key: KEY })).status, 404);
    assert.equal((await call(sim, 'DELETE', `/v2/network-volumes/${fast.id}`, { key: KEY })).status, 204);
  });

  test('a create off the contract is 422; one the data center cannot serve is 400', async () => {
    const refused = async (body: unknown): Promise<[number, unknown]> => {
      const response = await call(sim, 'POST', '/v2/network-volumes', { key: KEY, body });
      return [response.status, field(response.body, 'errors') ?? field(response.body, 'detail')];
    };
    assert.deepEqual(await refused({ name: 'x', size: 10 }), [422, ["$: missing property 'dataCenter'"]]);
    assert.deepEqual(await refused({ name: 'x', size: 9, dataCenter: 'EU-RO-1' }), [422, ['$.size: minimum: want 10']]);
    assert.deepEqual(await refused({ name: 'x', size: 4097, dataCenter: 'EU-RO-1' }), [422, ['$.size: maximum: want 4096']]);
    assert.deepEqual(await refused({ name: '', size: 10, dataCenter: 'EU-RO-1' }), [422, ['$.name: minLength: want 1']]);
    assert.deepEqual(await refused({ name: 'x', size: 10, dataCenter: 'EU-RO-1', type: 'FAST' }), [422, ["$.type: value must be one of 'STANDARD', 'HIGH_PERFORMANCE'"]]);
    assert.deepEqual(await refused({ name: 'x', size: 10, dataCenterId: 'EU-RO-1' }), [422, ["$: missing property 'dataCenter'", "$: additional properties 'dataCenterId' not allowed"]]);
    assert.deepEqual(await refused({ name: 'x', size: 10, dataCenter: 'XX-1' }), [400, 'unknown data center: XX-1']);
    assert.deepEqual(await refused({ name: 'x', size: 10, dataCenter: 'EU-RO-1', type: 'HIGH_PERFORMANCE' }), [400, 'data center EU-RO-1 does not offer HIGH_PERFORMANCE network volumes']);
    assert.deepEqual(await refused({ name: 'x', size: 10, dataCenter: 'CA-MTL-1' }), [400, 'data center CA-MTL-1 does not offer network volumes']);
    // [I] scope names: a key without the volumes' scopes is refused, as for pods.
    assert.equal((await call(sim, 'GET', '/v2/network-volumes', { key: PODS_ONLY })).status, 403);
    assert.equal((await call(sim, 'POST', '/v2/network-volumes', { key: PODS_ONLY, body: { name: 'x', size: 10, dataCenter: 'EU-RO-1' } })).status, 403);
  });

  test('preset volumes: a fixed id, the tier defaulted, an owner keeps it from other accounts; bad presets are config errors', async () => {
    const preset = await call(sim, 'GET', '/v2/network-volumes/vol-preset-us', { key: OTHER });
    assert.deepEqual(preset.body, { id: 'vol-preset-us', name: 'preset', size: 20, dataCenter: 'US-TX-3', type: 'STANDARD' });
    assert.equal((await call(sim, 'GET', '/v2/network-volumes/vol-of-other', { key: OTHER })).status, 200);
    assert.equal((await call(sim, 'GET', '/v2/network-volumes/vol-of-other', { key: KEY })).status, 404);
    assert.equal((await call(sim, 'POST', '/v2/pods', { key: KEY, body: podBody('not-mine', 'vol-of-other') })).status, 404);
    assert.throws(() => parseConfig({ networkVolumes: [{ id: 'v', name: 'v', size: 10, dataCenter: 'XX-1' }] }), /networkVolumes\[0\]\.dataCenter: unknown data center XX-1/);
    assert.throws(() => parseConfig({ networkVolumes: [{ id: 'v', name: 'v', size: 10, dataCenter: 'EU-RO-1', type: 'HIGH_PERFORMANCE' }] }), /EU-RO-1 offers no HIGH_PERFORMANCE network volumes/);
    assert.throws(() => parseConfig({ networkVolumes: [{ id: 'v/1', name: 'v', size: 10, dataCenter: 'EU-RO-1' }] }), /networkVolumes\[0\]\.id/);
  });

  test('a pod is placed in its volume\'s data center, or refused when dataCenterIds leaves it out', async () => {
    // The type's data centers in config order would put it in EU-RO-1: the volume pins it to US-TX-3.
    const pinned = await call(sim, 'POST', '/v2/pods', { key: KEY, body: podBody('pinned', 'vol-preset-us') });
    assert.equal(pinned.status, 201);
    assert.equal(field(pinned.body, 'dataCenterId'), 'US-TX-3');
    assert.deepEqual(field(pinned.body, 'mounts'), { network: [{ volumeId: 'vol-preset-us', path: '/workspace' }] });
    const listed = await call(sim, 'POST', '/v2/pods', { key: KEY, body: podBody('listed', 'vol-preset-us', { dataCenterIds: ['EU-RO-1', 'US-TX-3'] }) });
    assert.equal(field(listed.body, 'dataCenterId'), 'US-TX-3');
    // Placement: dataCenterIds is enforced, and a list without the volume's is the capacity 400.
    const elsewhere = await call(sim, 'POST', '/v2/pods', { key: KEY, body: podBody('elsewhere', 'vol-preset-us', { dataCenterIds: ['EU-RO-1'] }) });
    assert.deepEqual(elsewhere.body, { title: 'Bad Request', status: 400, detail: CAPACITY_DETAIL });
    const unknown = await call(sim, 'POST', '/v2/pods', { key: KEY, body: podBody('unknown', 'vol-nope') });
    assert.deepEqual(unknown.body, { title: 'Not Found', status: 404, detail: 'resource not found' });
    // A volume a pod mounts cannot be deleted: 400, as a registry credential in use (openapi-v2.json).
    const busy = await call(sim, 'DELETE', '/v2/network-volumes/vol-preset-us', { key: KEY });
    assert.deepEqual(busy.body, { title: 'Bad Request', status: 400, detail: 'Network volume is in use by a pod and cannot be deleted' });
    for (const pod of [pinned, listed]) assert.equal((await call(sim, 'DELETE', `/v2/pods/${String(field(pod.body, 'id'))}`, { key: KEY })).status, 204);
    await assertNoLeaks(sim.adminUrl);
  });

  test('pods naming one volume share its files, and a pod created later sees what an earlier one wrote', async () => {
    const volume = await createSimVolume(sim.baseUrl, KEY, { name: 'shared', size: 10, dataCenter: 'EU-RO-1' });
    const podWith = async (name: string, script: string): Promise<string> => {
      const created = await call(sim, 'POST', '/v2/pods', { key: KEY, body: podBody(name, volume.id, { args: shArgs(script) }) });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(field(created.body, 'dataCenterId'), 'EU-RO-1');
      return String(field(created.body, 'id'));
    };
    const waitFor = (file: string): string => `while [ ! -f /workspace/${file} ]; do sleep 0.05; done`;
    // A writes, B reads A's file and answers with its own, which A reads: both ways through one directory.
    const a = await podWith('writer', `echo "from A" > /workspace/a.txt\n${waitFor('b.txt')}\necho "A read: $(cat /workspace/b.txt)"\nexec sleep infinity`);
    const b = await podWith('reader', `${waitFor('a.txt')}\necho "B read: $(cat /workspace/a.txt) volume $RUNPOD_VOLUME_ID"\necho "from B" > /workspace/b.txt\nexec sleep infinity`);
    await podLogUntil(sim.baseUrl, KEY, b, 'source=container&tail=5000', new RegExp(`^B read: from A volume ${volume.id}$`));
    await podLogUntil(sim.baseUrl, KEY, a, 'source=container&tail=5000', /^A read: from B$/);
    for (const pod of [a, b]) assert.equal((await call(sim, 'DELETE', `/v2/pods/${pod}`, { key: KEY })).status, 204);
    const later = await podWith('later', 'echo "later read: $(cat /workspace/a.txt) $(cat /workspace/b.txt)"\nexec sleep infinity');
    await podLogUntil(sim.baseUrl, KEY, later, 'source=container&tail=5000', /^later read: from A from B$/);
    assert.equal((await call(sim, 'DELETE', `/v2/pods/${later}`, { key: KEY })).status, 204);
    // Deleted with no pod on it, its files go too.
    assert.equal((await call(sim, 'DELETE', `/v2/network-volumes/${volume.id}`, { key: KEY })).status, 204);
    await assertNoLeaks(sim.adminUrl);
  });
});
