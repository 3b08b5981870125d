// spec.imagePullSecret read as `kubectl create secret docker-registry` writes it: the entry for the
// image's registry (Docker Hub under any of its names), a credential name per install and credential,
// and refusals that name the Secret and the registry, never the password.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { registryNamePrefix, registryOf, resolveRegistryAuth } from '../../../src/run/observe/registry-auth.ts';
import type { RunApi } from '../../../src/run/ports/run-api.ts';

const password = 'pull-PASSWORD-0123456789';
const prefix = registryNamePrefix('cluster-1', 'cluster-wide');
/** A RunApi that holds one Secret's .dockerconfigjson (or none). */
const holding = (config?: unknown): RunApi => ({
  secretValue: (_ns: string, name: string, key: string) => Promise.resolve(name === 'pull' && key === '.dockerconfigjson' && config !== undefined ? (typeof config === 'string' ? config : JSON.stringify(config)) : undefined),
}) as unknown as RunApi;

test('the registry of an image reference: a host first (a dot, a port, localhost), else Docker Hub', () => {
  for (const [image, registry] of [['ghcr.io/acme/trainer:1', 'ghcr.io'], ['registry.example:5000/x/y', 'registry.example:5000'], ['localhost/img', 'localhost'],
    ['acme/trainer:1', 'docker.io'], ['ubuntu', 'docker.io'], ['docker.io/library/ubuntu', 'docker.io']] as const) {
    assert.equal(registryOf(image), registry, image);
  }
});

test('the entry for the image\'s registry, by username/password or by auth; Docker Hub under any of its names', async () => {
  const byAuth = { auths: { 'https://index.docker.io/v1/': { auth: Buffer.from(`ci:${password}`).toString('base64') } } };
  const hub = await resolveRegistryAuth(holding(byAuth), 'ns', 'acme/trainer:1', 'pull', prefix);
  assert.equal(hub.kind, 'ok');
  assert.ok(hub.kind === 'ok');
  assert.deepEqual({ ...hub.auth, name: undefined }, { name: undefined, registry: 'docker.io', username: 'ci', password });
  assert.match(hub.auth.name, new RegExp(`^${prefix}[0-9a-f]{16}$`));
  const ghcr = await resolveRegistryAuth(holding({ auths: { 'ghcr.io': { username: 'bot', password } } }), 'ns', 'ghcr.io/acme/x:2', 'pull', prefix);
  assert.ok(ghcr.kind === 'ok' && ghcr.auth.username === 'bot');
  // The same credential: the same name in this install, another in another install.
  const again = await resolveRegistryAuth(holding(byAuth), 'ns', 'acme/other:9', 'pull', prefix);
  assert.ok(again.kind === 'ok' && again.auth.name === hub.auth.name);
  const elsewhere = await resolveRegistryAuth(holding(byAuth), 'ns', 'acme/trainer:1', 'pull', registryNamePrefix('cluster-2', 'cluster-wide'));
  assert.ok(elsewhere.kind === 'ok' && elsewhere.auth.name !== hub.auth.name);
});

test('no spec.imagePullSecret: nothing; a missing Secret waits; no entry for the registry or no Docker config is the spec\'s fault', async () => {
  assert.deepEqual(await resolveRegistryAuth(holding(), 'ns', 'img', undefined, prefix), { kind: 'none' });
  const missing = await resolveRegistryAuth(holding(), 'ns', 'img', 'pull', prefix);
  assert.equal(missing.kind, 'missing');
  const other = await resolveRegistryAuth(holding({ auths: { 'ghcr.io': { username: 'bot', password } } }), 'ns', 'acme/trainer:1', 'pull', prefix);
  assert.deepEqual(other, { kind: 'invalid', message: 'spec.imagePullSecret: Secret ns/pull has no username and password for docker.io, the registry of spec.image acme/trainer:1' });
  const garbled = await resolveRegistryAuth(holding(`{"auths": ${password}`), 'ns', 'img', 'pull', prefix);
  assert.equal(garbled.kind, 'invalid');
  assert.ok(garbled.kind === 'invalid' && !garbled.message.includes(password), 'the value is never quoted');
});
