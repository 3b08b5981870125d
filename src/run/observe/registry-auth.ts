// spec.imagePullSecret: a kubernetes.io/dockerconfigjson Secret (what `kubectl create secret
// docker-registry` writes: {"auths": {"<registry>": {username, password, auth}}}) with an entry for the
// image's registry. The Runpod registry credential made from it is named by this install and a digest
// of the credential, so every run of the install with the same credential shares one, and the sweeper
// knows its own. The password joins the redaction set and goes nowhere but Runpod's create call.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { registerSecret } from '../../log.ts';
import type { RunApi } from '../ports/run-api.ts';

export interface RegistryAuth { name: string; registry: string; username: string; password: string }

/** What decide needs: nothing to pull with, the credential's name, or why there is none (missing: wait; invalid: the spec's fault). */
export type RegistryAuthVerdict = { kind: 'none' } | { kind: 'ok'; auth: RegistryAuth } | { kind: 'missing' | 'invalid'; message: string };

const DOCKER_HUB = 'docker.io';
const dockerConfig = z.object({
  auths: z.record(z.string(), z.object({ username: z.string().optional(), password: z.string().optional(), auth: z.string().optional() }).loose()),
}).loose();

/** The registry host of an image reference: its first part when that names a host (a dot, a port, localhost), else Docker Hub. */
export function registryOf(image: string): string {
  const first = image.split('/')[0] ?? '';
  return image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost') ? first.toLowerCase() : DOCKER_HUB;
}

/** A dockerconfigjson key as a host: "https://index.docker.io/v1/" and "docker.io" are both Docker Hub. */
function hostOf(key: string): string {
  const host = (key.replace(/^[a-z]+:\/\//i, '').split('/')[0] ?? '').toLowerCase();
  return ['index.docker.io', 'registry-1.docker.io', 'docker.io'].includes(host) ? DOCKER_HUB : host;
}

/** The prefix of this install's credential names (the sweeper deletes only these). */
export function registryNamePrefix(clusterId: string, scope: string): string {
  return `runpod-operator-${createHash('sha256').update(`${clusterId}\0${scope}`).digest('hex').slice(0, 8)}-`;
}

export async function resolveRegistryAuth(runs: RunApi, namespace: string, image: string, secretName: string | undefined, prefix: string): Promise<RegistryAuthVerdict> {
  if (!secretName) return { kind: 'none' };
  const field = `spec.imagePullSecret: Secret ${namespace}/${secretName}`;
  const raw = await runs.secretValue(namespace, secretName, '.dockerconfigjson');
  if (raw === undefined) return { kind: 'missing', message: `${field} (a kubernetes.io/dockerconfigjson Secret with the key .dockerconfigjson)` };
  let config: z.output<typeof dockerConfig>;
  try {
    config = dockerConfig.parse(JSON.parse(raw));
  } catch {
    return { kind: 'invalid', message: `${field}: .dockerconfigjson is not a Docker config ({"auths": {...}})` };
  }
  const registry = registryOf(image);
  const entry = Object.entries(config.auths).find(([key]) => hostOf(key) === registry)?.[1];
  const decoded = entry?.auth ? Buffer.from(entry.auth, 'base64').toString('utf8') : '';
  const username = entry?.username ?? decoded.slice(0, Math.max(0, decoded.indexOf(':')));
  const password = entry?.password ?? decoded.slice(decoded.indexOf(':') + 1);
  if (!entry || !username || !password) return { kind: 'invalid', message: `${field} has no username and password for ${registry}, the registry of spec.image ${image}` };
  registerSecret(password);
  const digest = createHash('sha256').update(`${prefix}\0${registry}\0${username}\0${password}`).digest('hex').slice(0, 16);
  return { kind: 'ok', auth: { name: `${prefix}${digest}`, registry, username, password } };
}
