// spec.networkVolume before any pod: the volume is read once, its data center placing every pod of the
// run; a volume the account lacks, dataCenterIds that exclude its data center, or a data center without
// any of spec.gpu.types is InvalidSpec before a create.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decide, learn } from '../../../src/run/decide/decide.ts';
import { placement } from '../../../src/run/decide/network-volume.ts';
import { buildCreatePodRequest } from '../../../src/run/act/pod-request.ts';
import { observe, spec, t0 } from '../fixture.ts';

const withVolume = (extra: Record<string, unknown> = {}) => spec({ networkVolume: { id: 'nv1', mountPath: '/workspace/ckpt' }, ...extra });

describe('spec.networkVolume', () => {
  test('is read before anything is created, once: the status keeps its data center, and every create is placed there', () => {
    const s = withVolume();
    const first = decide(observe({ spec: s }));
    assert.deepEqual(first.action, { type: 'readNetworkVolume', volumeId: 'nv1' });
    assert.equal(first.status.attempts, undefined, 'nothing created before the volume is known');
    const learned = learn(observe({ spec: s }), first.status, { step: 'readNetworkVolume', result: { kind: 'found', dataCenterId: 'EU-RO-1', gpuTypes: ['A', 'C'] } });
    assert.deepEqual(learned.networkVolume, { id: 'nv1', dataCenterId: 'EU-RO-1' });
    const next = decide(observe({ spec: s }, learned));
    assert.deepEqual(next.action, { type: 'createPod', attemptName: 'r-1', gpuType: 'A', attemptNumber: 1 });
    assert.deepEqual(placement(s.spec, learned), ['EU-RO-1']);
    assert.deepEqual(placement(spec().spec, {}), undefined);
    assert.deepEqual(placement(spec({ dataCenterIds: ['US-TX-3'] }).spec, {}), ['US-TX-3']);
  });

  test('the create request carries the placement, the volume mount, and a deadline no later than the run\'s', () => {
    const s = withVolume();
    const request = buildCreatePodRequest({
      run: { apiVersion: 'runpod-operator.dev/v1alpha1', kind: 'RunpodRun', metadata: { name: 'r', namespace: 'ns', uid: 'uid-1' }, spec: s.spec },
      spec: s.spec, sshKeys: { clientPrivateKey: 'x', clientPublicKey: 'ssh-ed25519 AAAA', hostPrivateKey: '-----BEGIN OPENSSH PRIVATE KEY-----\nx\n', hostPublicKey: 'ssh-ed25519 AAAA' },
      attemptName: 'r-1', attemptNumber: 1, gpuType: 'A', now: t0, placement: ['EU-RO-1'], runDeadlineMs: t0.getTime() + 120_000,
      clusterId: 'c', scope: 'cluster', runpodApiUrl: 'http://127.0.0.1/v2', watchdogPeriodMs: 10_000,
    });
    assert.deepEqual(request.dataCenterIds, ['EU-RO-1']);
    assert.deepEqual(request.mounts, { network: [{ volumeId: 'nv1', path: '/workspace/ckpt' }] });
    // maxRuntimeSeconds (600) would end later than limits.activeDeadlineSeconds' end, 120 s from now.
    assert.equal(request.env?.RUNPOD_OPERATOR_DEADLINE, String(t0.getTime() / 1000 + 120));
  });

  for (const [what, s, result, message] of [
    ['a volume the account does not have', withVolume(), { kind: 'missing' }, /^spec\.networkVolume\.id: this Runpod account has no network volume nv1$/],
    ['dataCenterIds without the volume\'s data center', withVolume({ dataCenterIds: ['US-TX-3'] }), { kind: 'found', dataCenterId: 'EU-RO-1' }, /spec\.dataCenterIds \(US-TX-3\) does not include EU-RO-1, the data center of spec\.networkVolume nv1/],
    ['a data center that offers none of gpu.types', withVolume(), { kind: 'found', dataCenterId: 'EU-RO-1', gpuTypes: ['C'] }, /EU-RO-1, the data center of spec\.networkVolume nv1, offers none of spec\.gpu\.types \(A, B\)/],
  ] as const) {
    test(`${what}: Failed/InvalidSpec naming it, before any create`, () => {
      const first = decide(observe({ spec: s }));
      const learned = learn(observe({ spec: s }), first.status, { step: 'readNetworkVolume', result });
      assert.equal(learned.phase, 'Failed');
      assert.equal(learned.reason, 'InvalidSpec');
      assert.match(learned.message ?? '', message);
      assert.equal(learned.attempts, undefined);
      assert.notEqual(decide(observe({ spec: s }, learned)).action.type, 'createPod');
    });
  }

  test('dataCenterIds that include the volume\'s data center are accepted, and the pod goes there alone', () => {
    const s = withVolume({ dataCenterIds: ['US-TX-3', 'EU-RO-1'] });
    const learned = learn(observe({ spec: s }), decide(observe({ spec: s })).status, { step: 'readNetworkVolume', result: { kind: 'found', dataCenterId: 'EU-RO-1' } });
    assert.notEqual(learned.phase, 'Failed');
    assert.deepEqual(placement(s.spec, learned), ['EU-RO-1']);
  });
});
