// spec.imagePullSecret before any pod: the Runpod registry credential exists (found or created) before a
// create names it; a Secret without the image's registry is InvalidSpec, a missing one waits.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decide, learn } from '../../../src/run/decide/decide.ts';
import { observe, spec } from '../fixture.ts';

const name = 'runpod-operator-0a1b2c3d-0123456789abcdef';
const privateSpec = spec({ imagePullSecret: { name: 'pull' } });

test('the credential is ensured before the first create, once; a new credential (the Secret changed) is ensured again', () => {
  const first = decide(observe({ spec: privateSpec, jobInputs: { ok: true, registry: name } }));
  assert.deepEqual(first.action, { type: 'ensureRegistry', name });
  assert.equal(first.status.attempts, undefined);
  const learned = learn(observe({ spec: privateSpec }), first.status, { step: 'ensureRegistry', result: { id: 'reg1', name } });
  assert.deepEqual(learned.registry, { id: 'reg1', name });
  assert.equal(decide(observe({ spec: privateSpec, jobInputs: { ok: true, registry: name } }, learned)).action.type, 'createPod');
  assert.deepEqual(decide(observe({ spec: privateSpec, jobInputs: { ok: true, registry: `${name}x` } }, learned)).action, { type: 'ensureRegistry', name: `${name}x` });
});

test('a Secret without the image\'s registry: Failed/InvalidSpec before anything; a missing Secret waits, Pending/CredentialsMissing', () => {
  const invalid = decide(observe({ spec: privateSpec, jobInputs: { ok: false, invalid: true, message: 'spec.imagePullSecret: Secret ns/pull has no username and password for docker.io' } }));
  assert.equal(invalid.status.phase, 'Failed');
  assert.equal(invalid.status.reason, 'InvalidSpec');
  const missing = decide(observe({ spec: privateSpec, jobInputs: { ok: false, message: 'waiting for spec.imagePullSecret: Secret ns/pull' } }));
  assert.equal(missing.status.phase, 'Pending');
  assert.equal(missing.status.reason, 'CredentialsMissing');
});
