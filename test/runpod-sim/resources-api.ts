// /v2/network-volumes and /v2/registries (openapi-v2.json; API-NOTES 2026-12 addendum, part 2), and
// what a pod create checks of the volume and the registry credential it names. Statuses are the
// spec's: 422 for a body off the contract (strict, as every v2 body), 400 for a rule it breaks, 404
// for an id this account does not have. Credentials are write-only: no answer carries them.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import type { ApiHandler } from './api.ts';
import { VOLUME_TYPES } from './config.ts';
import type { SimCore } from './core.ts';
import { empty, fail, json, readJsonBody, type Reply, type Route } from './http.ts';
import { problem, problems, validationErrors, type Problem } from './problems.ts';
import type { CreatePodBody } from './requests.ts';
import { mountedVolumeId, registryView, volumeView } from './resources.ts';
import type { PodRecord } from './state.ts';

const size = z.number().int().min(10).max(4096);

const createVolumeSchema = z.strictObject({
  name: z.string().min(1),
  size,
  dataCenter: z.string().min(1),
  type: z.enum(VOLUME_TYPES).optional(),
});

const updateVolumeSchema = z.strictObject({ name: z.string().min(1).optional(), size: size.optional() });

const createRegistrySchema = z.strictObject({ name: z.string().min(1), username: z.string().min(1), password: z.string().min(1) });

/** The body checked against a schema: its value, or the 400 (not JSON) / 422 (off the contract) reply. */
async function bodyOf<T>(req: IncomingMessage, schema: z.ZodType<T>): Promise<{ ok: true; value: T } | { ok: false; reply: Reply }> {
  const raw = await readJsonBody(req);
  if (!raw.ok) return { ok: false, reply: fail(problem(raw.status, raw.detail)) };
  const parsed = schema.safeParse(raw.value);
  // validationErrors names fields and types, never a value: a password sent in a bad body is not echoed.
  if (!parsed.success) return { ok: false, reply: fail(problems.validation(validationErrors(parsed.error.issues, raw.value))) };
  return { ok: true, value: parsed.data };
}

/** Pods (of any account) not deleted that match: a stopped pod still holds its volume and its credential. */
function livePodsWhere(core: SimCore, test: (pod: PodRecord) => boolean): number {
  return [...core.state.pods.values()].filter((pod) => pod.deletedAt === null && test(pod)).length;
}

const listVolumes: ApiHandler = async (core, { principal }) =>
  Promise.resolve(json(200, { networkVolumes: core.resources.volumesOf(principal.key).map(volumeView) }));

const getVolume: ApiHandler = async (core, { principal, params }) => {
  const volume = core.resources.volume(principal.key, params[0] ?? '');
  return Promise.resolve(volume ? json(200, volumeView(volume)) : fail(problems.notFound()));
};

const createVolume: ApiHandler = async (core, { req, principal }) => {
  const body = await bodyOf(req, createVolumeSchema);
  if (!body.ok) return body.reply;
  const { name, size: gb, dataCenter, type } = body.value;
  const dc = core.config.dataCenters.find((candidate) => candidate.id === dataCenter);
  if (!dc) return fail(problem(400, `unknown data center: ${dataCenter}`));
  // The data center's default (primary) tier when none is asked for (CreateNetworkVolumeRequest.type).
  const tier = type ?? dc.networkVolumeTypes[0];
  if (tier === undefined) return fail(problem(400, `data center ${dc.id} does not offer network volumes`));
  if (!dc.networkVolumeTypes.includes(tier)) return fail(problem(400, `data center ${dc.id} does not offer ${tier} network volumes`));
  const volume = core.resources.addVolume(principal.key, { name, size: gb, dataCenter: dc.id, type: tier });
  return json(201, volumeView(volume));
};

const updateVolume: ApiHandler = async (core, { req, principal, params }) => {
  const body = await bodyOf(req, updateVolumeSchema);
  if (!body.ok) return body.reply;
  // UpdateNetworkVolumeRequest minProperties 1: an empty body is off the contract.
  if (body.value.name === undefined && body.value.size === undefined) return fail(problems.validation(['$: minProperties: want 1']));
  const volume = core.resources.volume(principal.key, params[0] ?? '');
  if (!volume) return fail(problems.notFound());
  const { name, size: gb } = body.value;
  // openapi-v2.json: 400 "Invalid request body or size decrease attempted".
  if (gb !== undefined && gb < volume.size) return fail(problem(400, `network volume size can only grow: ${gb} GB is less than its ${volume.size} GB`));
  if (name !== undefined) volume.name = name;
  if (gb !== undefined) volume.size = gb;
  return json(200, volumeView(volume));
};

const deleteVolume: ApiHandler = async (core, { principal, params }) => {
  const volume = core.resources.volume(principal.key, params[0] ?? '');
  if (!volume) return Promise.resolve(fail(problems.notFound()));
  if (livePodsWhere(core, (pod) => mountedVolumeId(pod) === volume.id) > 0) {
    return Promise.resolve(fail(problem(400, 'Network volume is in use by a pod and cannot be deleted')));
  }
  core.resources.deleteVolume(volume.id);
  // Its files go with it (ids are [A-Za-z0-9_-], the directory's name as pods.ts makes it).
  rmSync(join(core.volumesDir, volume.id), { recursive: true, force: true });
  return Promise.resolve(empty(204));
};

const listRegistries: ApiHandler = async (core, { principal }) =>
  Promise.resolve(json(200, { registries: core.resources.registriesOf(principal.key).map(registryView) }));

const getRegistry: ApiHandler = async (core, { principal, params }) => {
  const registry = core.resources.registry(principal.key, params[0] ?? '');
  return Promise.resolve(registry ? json(200, registryView(registry)) : fail(problems.notFound()));
};

const createRegistry: ApiHandler = async (core, { req, principal }) => {
  const body = await bodyOf(req, createRegistrySchema);
  if (!body.ok) return body.reply;
  return json(201, registryView(core.resources.addRegistry(principal.key, body.value)));
};

const deleteRegistry: ApiHandler = async (core, { principal, params }) => {
  const registry = core.resources.registry(principal.key, params[0] ?? '');
  if (!registry) return Promise.resolve(fail(problems.notFound()));
  // openapi-v2.json deleteRegistry: 400 "Registry credential is in use by a pod and cannot be deleted".
  if (livePodsWhere(core, (pod) => pod.spec.registry === registry.id) > 0) {
    return Promise.resolve(fail(problem(400, 'Registry credential is in use by a pod and cannot be deleted')));
  }
  core.resources.deleteRegistry(registry.id);
  return Promise.resolve(empty(204));
};

export const resourceRoutes: Route<ApiHandler>[] = [
  { method: 'GET', template: '/v2/network-volumes', handler: listVolumes },
  { method: 'POST', template: '/v2/network-volumes', handler: createVolume },
  { method: 'GET', template: '/v2/network-volumes/{id}', handler: getVolume },
  { method: 'PATCH', template: '/v2/network-volumes/{id}', handler: updateVolume },
  { method: 'DELETE', template: '/v2/network-volumes/{id}', handler: deleteVolume },
  { method: 'GET', template: '/v2/registries', handler: listRegistries },
  { method: 'POST', template: '/v2/registries', handler: createRegistry },
  { method: 'GET', template: '/v2/registries/{id}', handler: getRegistry },
  { method: 'DELETE', template: '/v2/registries/{id}', handler: deleteRegistry },
];

/**
 * What a pod create names besides its GPU: the registry credential (null: none; "" counts as none)
 * and the network volume must be this account's, else 404 as for any id the caller cannot see. The
 * volume pins the pod to its data center: `dataCenterIds` without it leaves nowhere to place the pod
 * (the capacity 400, API-NOTES Placement: "a too-narrow list is refused with the same 400 text as no
 * capacity"), and without `dataCenterIds` the volume's data center is the only candidate.
 */
export function createPodResources(core: SimCore, account: string, body: CreatePodBody, candidates: readonly string[]):
  { ok: true; candidates: string[]; registry: string | null } | { ok: false; problem: Problem } {
  const registry = body.registry === undefined || body.registry === null || body.registry === '' ? null : body.registry;
  if (registry !== null && !core.resources.registry(account, registry)) return { ok: false, problem: problems.notFound() };
  const volumeId = body.mounts?.network?.[0]?.volumeId;
  if (volumeId === undefined) return { ok: true, candidates: [...candidates], registry };
  const volume = core.resources.volume(account, volumeId);
  if (!volume) return { ok: false, problem: problems.notFound() };
  const narrowed = body.dataCenterIds && body.dataCenterIds.length > 0;
  return { ok: true, candidates: narrowed ? candidates.filter((dc) => dc === volume.dataCenter) : [volume.dataCenter], registry };
}
