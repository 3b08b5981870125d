// The REST v2 endpoints: pods, pod actions and the catalog. Auth, quotas and request-level faults
// are applied before these run (server.ts); here a pod-scoped key has already been limited to its
// own pod.
import type { IncomingMessage } from 'node:http';
import { accountLimits, spendLimitRefusal } from './account.ts';
import type { SimCore } from './core.ts';
import { empty, fail, json, readJsonBody, type Reply, type Route } from './http.ts';
import { logStream } from './logstream.ts';
import { problem, problems, validationErrors } from './problems.ts';
import { createPodResources, resourceRoutes } from './resources-api.ts';
import { createPodSchema, cudaAllowed, podActionSchema, ruleViolation } from './requests.ts';
import type { PodKeyRefusal } from './config.ts';
import type { Principal, PodRecord } from './state.ts';
import { allowedActions, apiStatus, dataCenterView, gpuTypeView, offeredOn, podView } from './views.ts';

export interface ApiContext {
  req: IncomingMessage;
  principal: Principal;
  params: string[];
  query: URLSearchParams;
}

export type ApiHandler = (core: SimCore, ctx: ApiContext) => Promise<Reply>;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The pod a principal may see: its account's own, or for a pod key only itself. */
function visiblePod(core: SimCore, principal: Principal, id: string): PodRecord | undefined {
  const pod = core.state.alivePod(id);
  if (!pod) return undefined;
  if (principal.kind === 'pod') return pod.id === principal.podId ? pod : undefined;
  return pod.accountKey === principal.key ? pod : undefined;
}

async function parseBody(req: IncomingMessage): Promise<{ ok: true; value: unknown } | { ok: false; reply: Reply }> {
  const body = await readJsonBody(req);
  return body.ok ? body : { ok: false, reply: fail(problem(body.status, body.detail)) };
}

/** With listLag.get, GET of one pod lags like the list: a new pod 404s, a deleted one is still shown. */
function lookedUpPod(core: SimCore, principal: Principal, id: string): PodRecord | undefined {
  if (!core.config.listLag.get) return visiblePod(core, principal, id);
  const pod = core.state.pods.get(id);
  if (!pod || !core.state.listed(pod)) return undefined;
  const owner = principal.kind === 'pod' ? pod.id === principal.podId : pod.accountKey === principal.key;
  return owner ? pod : undefined;
}

const listPods: ApiHandler = async (core, { principal, query }) => {
  const { pageSize, statusFlow } = core.config.pods;
  if (pageSize === undefined) return Promise.resolve(json(200, { pods: core.state.listedPods(principal.key).map((pod) => podView(pod, statusFlow)) }));
  const cursor = query.get('cursor');
  const after = cursor === null ? undefined : core.cursors.resolve(principal.key, cursor);
  // Strict [I]: a cursor that cannot be followed is an error, never an empty (or a first) page.
  if (cursor !== null && after === undefined) return Promise.resolve(fail(problem(400, 'invalid or expired pagination cursor')));
  const candidates = core.state.listedPodsAfter(principal.key, after);
  const pods = candidates.slice(0, pageSize);
  const last = pods.at(-1);
  const hasNextPage = candidates.length > pageSize && last !== undefined;
  const nextCursor = hasNextPage ? core.cursors.issue(principal.key, last.id) : null;
  return Promise.resolve(json(200, { pods: pods.map((pod) => podView(pod, statusFlow)), pagination: { nextCursor, hasNextPage } }));
};

const getPod: ApiHandler = async (core, { principal, params }) => {
  const id = params[0] ?? '';
  const pod = lookedUpPod(core, principal, id);
  if (!pod || core.faults.take('not-found-flap', (fault) => fault.podId === id)) return Promise.resolve(fail(problems.notFound()));
  return Promise.resolve(json(200, podView(pod, core.config.pods.statusFlow)));
};

/** Server-sent events of the pod's log (logstream.ts); an unknown pod is 404 as for GET /v2/pods/{id}. */
const podLogs: ApiHandler = async (core, { req, principal, params, query }) => {
  const pod = lookedUpPod(core, principal, params[0] ?? '');
  return Promise.resolve(pod ? logStream(req, query, core.podLog(pod.id)) : fail(problems.notFound()));
};

const getAccountLimits: ApiHandler = async (core) => Promise.resolve(json(200, accountLimits(core)));

const createPod: ApiHandler = async (core, { req, principal }) => {
  const raw = await parseBody(req);
  if (!raw.ok) return raw.reply;
  const parsed = createPodSchema.safeParse(raw.value);
  if (!parsed.success) return fail(problems.validation(validationErrors(parsed.error.issues, raw.value)));
  const body = parsed.data;
  if (body.image === undefined && body.templateId === undefined) return fail(problems.validation(["$: missing property 'image'"]));
  // No templates exist here, so every template id is unknown (v2: 404).
  if (body.templateId !== undefined) return fail(problems.notFound());
  const rule = ruleViolation(body);
  if (rule !== null || !body.gpu) return fail(problem(400, rule ?? 'exactly one of gpu or cpu must be set'));

  const { state } = core;
  const gpu = body.gpu;
  const type = state.gpuType(gpu.id);
  if (!type) return fail(problem(400, `unknown GPU type: ${gpu.id}`));
  const count = gpu.count ?? 1;
  if (count > type.maxCount) return fail(problem(400, `gpu.count ${count} exceeds the maximum of ${type.maxCount} for ${type.id}`));
  const unknownDc = body.dataCenterIds?.find((id) => !state.config.dataCenters.some((dc) => dc.id === id));
  if (unknownDc !== undefined) return fail(problem(400, `unknown data center: ${unknownDc}`));
  const cloud = body.cloud ?? 'SECURE';
  // A named registry and network volume must be the account's; the volume pins the pod to its data center.
  const resources = createPodResources(core, principal.key, body, body.dataCenterIds && body.dataCenterIds.length > 0 ? body.dataCenterIds : state.dataCentersOf(type.id));
  if (!resources.ok) return fail(resources.problem);
  const { candidates } = resources;
  const price = cloud === 'SECURE' ? type.pricePerHour.secure : (type.pricePerHour.community ?? type.pricePerHour.secure);
  const costPerHr = Math.round(price * count * 10000) / 10000;
  // Checked before placement: the refusal holds whatever the stock.
  const overSpend = spendLimitRefusal(core, principal.key, costPerHr);
  if (overSpend) return fail(overSpend);
  if (!offeredOn(type, cloud) || !cudaAllowed(gpu, type.cudaVersion)) return fail(problems.capacity());
  if (core.faults.take('no-capacity', (fault) => fault.gpuTypeId === undefined || fault.gpuTypeId === type.id)) {
    return fail(problems.capacity());
  }
  const dataCenterId = state.takeStock(type.id, candidates, count);
  if (dataCenterId === null) return fail(problems.capacity());

  const record = state.addPod({
    accountKey: principal.key,
    spec: {
      name: body.name,
      image: body.image ?? '',
      args: body.args ?? '',
      disk: body.disk ?? 50,
      ports: body.ports ?? [],
      env: body.env ?? {},
      mounts: body.mounts ?? {},
      registry: resources.registry,
      cloud,
      globalNetworking: body.globalNetworking ?? false,
    },
    gpuTypeId: type.id,
    gpuCount: count,
    dataCenterId,
    cudaVersion: type.cudaVersion,
    costPerHr,
    reachableAfter: 0,
    linkBytesPerSecond: null,
    clockOffsetSeconds: 0,
  });
  core.podLog(record.id).system(`Pod ${record.id} created: ${count} x ${type.id} in ${dataCenterId} (${cloud})`);
  const slow = core.faults.take('slow-boot');
  if (slow) record.reachableAfter = Date.now() + slow.delayMs;
  core.boot(record);

  const ambiguous = core.faults.take('create-ambiguous');
  if (ambiguous) return fail(problems.internal(ambiguous.status));
  if (core.faults.take('create-timeout')) return { kind: 'hold' };
  if (core.config.timings.createLatencyMs > 0) await sleep(core.config.timings.createLatencyMs);
  return json(201, podView(record, core.config.pods.statusFlow));
};

const deletePod: ApiHandler = async (core, { principal, params }) => {
  const pod = visiblePod(core, principal, params[0] ?? '');
  if (!pod) return fail(problems.notFound());
  if (podKeyRefused(core, principal, 'delete')) return fail(problems.forbidden());
  await core.deletePod(pod, principal.kind === 'pod' ? 'pod' : 'account');
  return empty(204);
};

const podAction: ApiHandler = async (core, { req, principal, params }) => {
  const raw = await parseBody(req);
  if (!raw.ok) return raw.reply;
  const parsed = podActionSchema.safeParse(raw.value);
  if (!parsed.success) return fail(problems.validation(validationErrors(parsed.error.issues, raw.value)));
  const pod = visiblePod(core, principal, params[0] ?? '');
  if (!pod) return fail(problems.notFound());
  const { action } = parsed.data;
  if (podKeyRefused(core, principal, action)) return fail(problems.forbidden());
  const flow = core.config.pods.statusFlow;
  if (!allowedActions(pod, flow).includes(action)) {
    return fail(problem(409, `action '${action}' is not valid for a pod in status ${apiStatus(pod, flow)}`));
  }
  if (action === 'terminate') {
    await core.deletePod(pod, principal.kind === 'pod' ? 'pod' : 'account');
    return empty(204);
  }
  let real = core.pods.get(pod.id);
  if (action === 'stop') {
    core.podLog(pod.id).system('Stopping container');
    pod.status = 'EXITED';
    core.state.releaseStock(pod);
    await real?.stopContainer();
  } else if (action === 'restart') {
    await real?.restartContainer();
  } else {
    const overSpend = spendLimitRefusal(core, pod.accountKey, pod.costPerHr);
    if (overSpend) return fail(overSpend);
    if (!core.state.retakeStock(pod)) return fail(problem(400, 'There are not enough free GPUs on the host machine to start this pod.'));
    const broken = pod.status === 'ERROR';
    pod.status = 'RUNNING';
    if (broken || !real) {
      // The pod's holder is gone: start over with a fresh one (its /workspace is lost, as on a host failure).
      await real?.destroy();
      real = core.boot(pod);
    } else {
      await real.startContainer(false);
    }
  }
  return json(200, podView(pod, flow));
};

function gpuQuery(query: URLSearchParams): { ok: true; availability: boolean; pod: boolean; count: number; cloud: 'SECURE' | 'COMMUNITY' } | { ok: false; reply: Reply } {
  const include = (query.get('include') ?? '').split(',').filter(Boolean);
  const products = (query.get('product') ?? '').split(',').filter(Boolean);
  if (include.some((value) => value !== 'AVAILABILITY')) return { ok: false, reply: fail(problems.validation(["$.include: value must be one of 'AVAILABILITY'"])) };
  if (products.some((value) => !['POD', 'CLUSTER', 'SERVERLESS'].includes(value))) {
    return { ok: false, reply: fail(problems.validation(["$.product: value must be one of 'POD', 'CLUSTER', 'SERVERLESS'"])) };
  }
  const availability = include.includes('AVAILABILITY');
  if (availability && products.length === 0) return { ok: false, reply: fail(problem(400, 'product is required with include=AVAILABILITY')) };
  if (!availability && products.length > 0) return { ok: false, reply: fail(problem(400, 'product is valid only with include=AVAILABILITY')) };
  const count = Number(query.get('count') ?? '1');
  if (!Number.isInteger(count) || count < 1) return { ok: false, reply: fail(problems.validation(['$.count: minimum: want 1'])) };
  const cloud = query.get('cloud') ?? 'SECURE';
  if (cloud !== 'SECURE' && cloud !== 'COMMUNITY') return { ok: false, reply: fail(problems.validation(["$.cloud: value must be one of 'SECURE', 'COMMUNITY'"])) };
  return { ok: true, availability, pod: products.includes('POD'), count, cloud };
}

const listGpuTypes: ApiHandler = async (core, { query }) => {
  const q = gpuQuery(query);
  if (!q.ok) return Promise.resolve(q.reply);
  return Promise.resolve(json(200, { gpus: core.config.gpuTypes.map((type) => gpuTypeView(core.state, type, q)) }));
};

const getGpuType: ApiHandler = async (core, { query, params }) => {
  const q = gpuQuery(query);
  if (!q.ok) return Promise.resolve(q.reply);
  const type = core.state.gpuType(params[0] ?? '');
  return Promise.resolve(type ? json(200, gpuTypeView(core.state, type, q)) : fail(problems.notFound()));
};

function dataCenterQuery(query: URLSearchParams): { gpu: boolean; regions: string[]; compliance: string[]; globalNetwork: boolean | null } {
  const list = (name: string): string[] => (query.get(name) ?? '').split(',').filter(Boolean);
  const global = query.get('globalNetwork');
  return { gpu: list('include').includes('GPU_AVAILABILITY'), regions: list('regions'), compliance: list('compliance'), globalNetwork: global === null ? null : global === 'true' };
}

const listDataCenters: ApiHandler = async (core, { query }) => {
  const q = dataCenterQuery(query);
  const dataCenters = core.config.dataCenters
    .filter((dc) => q.regions.length === 0 || q.regions.includes(dc.region))
    .filter((dc) => q.compliance.every((c) => dc.compliance.includes(c)))
    .filter((dc) => q.globalNetwork === null || dc.globalNetwork === q.globalNetwork)
    .map((dc) => dataCenterView(core.state, dc, q.gpu));
  return Promise.resolve(json(200, { dataCenters }));
};

const getDataCenter: ApiHandler = async (core, { query, params }) => {
  const dc = core.config.dataCenters.find((candidate) => candidate.id === params[0]);
  return Promise.resolve(dc ? json(200, dataCenterView(core.state, dc, dataCenterQuery(query).gpu)) : fail(problems.notFound()));
};

const notImplemented: ApiHandler = async () => Promise.resolve(fail(problem(501, 'not supported by the simulator')));

export const apiRoutes: Route<ApiHandler>[] = [
  { method: 'GET', template: '/v2/pods', handler: listPods },
  { method: 'POST', template: '/v2/pods', handler: createPod },
  { method: 'GET', template: '/v2/pods/{id}', handler: getPod },
  { method: 'DELETE', template: '/v2/pods/{id}', handler: deletePod },
  { method: 'PATCH', template: '/v2/pods/{id}', handler: notImplemented },
  { method: 'POST', template: '/v2/pods/{id}/action', handler: podAction },
  { method: 'GET', template: '/v2/pods/{id}/logs', handler: podLogs },
  { method: 'GET', template: '/v2/catalog/gpus', handler: listGpuTypes },
  { method: 'GET', template: '/v2/catalog/gpus/{id}', handler: getGpuType },
  { method: 'GET', template: '/v2/catalog/datacenters', handler: listDataCenters },
  { method: 'GET', template: '/v2/catalog/datacenters/{id}', handler: getDataCenter },
  { method: 'GET', template: '/v2/account/limits', handler: getAccountLimits },
  ...resourceRoutes,
];

/** A pod key refused by config on its own pod (`podKeys.refuse`): the call is 403 and changes nothing. */
function podKeyRefused(core: SimCore, principal: Principal, what: PodKeyRefusal): boolean {
  return principal.kind === 'pod' && core.config.podKeys.refuse.includes(what);
}

/** What a pod-scoped key may do: read (the pod, its logs), delete and act on its own pod. */
export function podKeyAllowed(method: string, template: string, params: string[], principal: Principal): boolean {
  if (principal.kind !== 'pod') return true;
  const own = params[0] === principal.podId;
  return own && ((template === '/v2/pods/{id}' && (method === 'GET' || method === 'DELETE')) || (template === '/v2/pods/{id}/logs' && method === 'GET')
    || (template === '/v2/pods/{id}/action' && method === 'POST'));
}
