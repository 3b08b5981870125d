// Whose identity writes a run's results: the keys of the run's own Secret, or (no
// spec.results.s3.credentials) the controller's own (env, IRSA, instance role), which may write only to
// the buckets an admin allowed with --results-s3-allowed-buckets: a bucket at AWS (no endpoint), or a
// bucket at one endpoint. Anything else is refused by name of the field, before anything is rented.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { s3SettingsFor, type AllowedBucket, type RunS3Spec } from '../../src/results/s3-settings.ts';

const run = { namespace: 'ns', name: 'r', uid: 'u1' };
const allowed: AllowedBucket[] = [{ bucket: 'ml-results' }, { bucket: 'team-b', endpoint: 'http://minio.storage.svc:9000' }];

const cases: { name: string; own: RunS3Spec; allowed?: AllowedBucket[]; refused: boolean }[] = [
  { name: 'own credentials: any bucket, any endpoint', own: { bucket: 'anything', endpoint: 'http://10.0.0.1:9000', credentials: { secretName: 's3' } }, refused: false },
  { name: 'no credentials, an allowed bucket at AWS', own: { bucket: 'ml-results' }, refused: false },
  { name: 'no credentials, an allowed bucket at its endpoint', own: { bucket: 'team-b', endpoint: 'http://minio.storage.svc:9000' }, refused: false },
  { name: 'no credentials, the same endpoint written with a trailing slash', own: { bucket: 'team-b', endpoint: 'http://minio.storage.svc:9000/' }, refused: false },
  { name: 'no credentials, a bucket nobody allowed', own: { bucket: 'someone-elses' }, refused: true },
  { name: 'no credentials, an allowed AWS bucket at another endpoint', own: { bucket: 'ml-results', endpoint: 'http://169.254.169.254' }, refused: true },
  { name: 'no credentials, an endpoint-bound bucket at AWS', own: { bucket: 'team-b' }, refused: true },
  { name: 'no credentials, nothing allowed (the default)', own: { bucket: 'ml-results' }, allowed: [], refused: true },
];

for (const c of cases) {
  test(`the controller's own identity: ${c.name} → ${c.refused ? 'refused' : 'used'}`, () => {
    const settings = s3SettingsFor(c.own, undefined, run, c.allowed ?? allowed);
    assert.ok(settings);
    if (!c.refused) {
      assert.equal(settings.refused, undefined);
      return;
    }
    assert.match(settings.refused ?? '', /^spec\.results\.s3\.credentials: absent, and the controller's own identity may write only to the buckets of --results-s3-allowed-buckets/);
    assert.match(settings.refused ?? '', new RegExp(`bucket "${c.own.bucket}"`));
  });
}

test('the controller\'s default store (--results-store s3://…) is the admin\'s own choice: never refused', () => {
  const settings = s3SettingsFor(undefined, { bucket: 'fleet', prefix: '', forcePathStyle: false }, run, []);
  assert.equal(settings?.refused, undefined);
});
