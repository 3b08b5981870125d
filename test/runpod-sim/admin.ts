// /_sim: the test tool's own API (no auth, loopback only): every pod ever created with its
// processes, request counters, and fault injection.
import type { IncomingMessage } from 'node:http';
import type { SimCore } from './core.ts';
import { faultSchema } from './faults.ts';
import { fail, json, readJsonBody, type Reply, type Route } from './http.ts';
import { problem, problems, validationErrors } from './problems.ts';
import { processTable, type ProcessTable } from './procs.ts';
import { assignedPorts, type PodRecord } from './state.ts';

export type AdminHandler = (core: SimCore, req: IncomingMessage, params: string[]) => Promise<Reply>;

function simPodView(core: SimCore, pod: PodRecord, table: ProcessTable | undefined): Record<string, unknown> {
  const real = core.pods.get(pod.id);
  const ssh = pod.container?.ports.find((port) => port.private === 22 && port.type === 'tcp');
  return {
    id: pod.id,
    name: pod.spec.name,
    status: pod.deletedAt === null ? pod.status : 'TERMINATED',
    env: pod.spec.env,
    gpuTypeId: pod.gpuTypeId,
    gpuCount: pod.gpuCount,
    costPerHr: pod.costPerHr,
    dataCenterId: pod.dataCenterId,
    createdAt: new Date(pod.createdAt).toISOString(),
    startedAt: pod.startedAt === null ? null : new Date(pod.startedAt).toISOString(),
    deletedAt: pod.deletedAt === null ? null : new Date(pod.deletedAt).toISOString(),
    deletedBy: pod.deletedBy,
    restarts: pod.restarts,
    sshPort: ssh?.public ?? null,
    ready: assignedPorts(pod) !== null,
    podApiKey: pod.podKey,
    clockOffsetSeconds: pod.clockOffsetSeconds,
    ...(table ? { processes: real?.processes(table) ?? [] } : {}),
  };
}

// Processes only when asked (?processes=1): finding them reads the namespace of every process on the
// machine, synchronously, and tests poll this list many times a second for a pod's state alone.
const listPods: AdminHandler = async (core, req) => {
  const withProcesses = new URL(req.url ?? '/', 'http://sim').searchParams.get('processes') === '1';
  const table = withProcesses ? processTable(new Set([...core.pods.values()].flatMap((pod) => pod.netNamespace ?? []))) : undefined;
  return Promise.resolve(json(200, { pods: [...core.state.pods.values()].map((pod) => simPodView(core, pod, table)) }));
};

const podLogs: AdminHandler = async (core, _req, params) => {
  const id = params[0] ?? '';
  // A pod whose image was refused (pull.ts) has no process, so no output: an empty log, not a 404.
  if (!core.state.pods.has(id)) return Promise.resolve(fail(problems.notFound()));
  return Promise.resolve({ kind: 'text', status: 200, body: core.pods.get(id)?.logs() ?? '' });
};

const armFault: AdminHandler = async (core, req) => {
  const body = await readJsonBody(req);
  if (!body.ok) return fail(problem(400, body.detail));
  const parsed = faultSchema.safeParse(body.value);
  if (!parsed.success) return fail(problem(400, 'invalid fault', { errors: validationErrors(parsed.error.issues, body.value) }));
  const fault = parsed.data;
  if (fault.fault === 'vanish') {
    // Not queued: the pod disappears (after afterMs), killed with no delete call, as on a host failure.
    const pod = core.state.alivePod(fault.podId);
    if (!pod) return fail(problem(400, `no live pod ${fault.podId}`));
    const vanish = (): Promise<void> => (pod.deletedAt === null ? core.deletePod(pod, 'vanished') : Promise.resolve());
    if (fault.afterMs === 0) await vanish();
    else setTimeout(() => void vanish(), fault.afterMs).unref();
    return json(200, { armed: fault });
  }
  if (fault.fault === 'slow-link') {
    // Not queued: every connection to the pod's ports from now on is paced (the ones open keep their speed).
    const pod = core.state.alivePod(fault.podId);
    if (!pod) return fail(problem(400, `no live pod ${fault.podId}`));
    pod.linkBytesPerSecond = fault.bytesPerSecond;
    return json(200, { armed: fault });
  }
  if (fault.fault === 'clock-skew') {
    // Not queued: the running container's clock is off once this returns, and every later container's.
    const pod = core.state.alivePod(fault.podId);
    if (!pod) return fail(problem(400, `no live pod ${fault.podId}`));
    await core.pods.get(pod.id)?.skewClock(fault.offsetSeconds);
    return json(200, { armed: fault });
  }
  if (fault.fault === 'container-exit') {
    // Not queued either: the container ends `count` times, one restart apart.
    const pod = core.state.alivePod(fault.podId);
    if (!pod) return fail(problem(400, `no live pod ${fault.podId}`));
    if (fault.afterMs === 0) await core.containerExit(pod, fault.status, fault.count);
    else setTimeout(() => void core.containerExit(pod, fault.status, fault.count), fault.afterMs).unref();
    return json(200, { armed: fault });
  }
  core.faults.arm(fault);
  return json(200, { armed: fault });
};

const listFaults: AdminHandler = async (core) => Promise.resolve(json(200, { faults: core.faults.pending() }));

const clearFaults: AdminHandler = async (core) => {
  core.faults.clear();
  return Promise.resolve(json(200, { faults: [] }));
};

const stats: AdminHandler = async (core) => Promise.resolve(json(200, core.stats.snapshot()));

const resetStats: AdminHandler = async (core) => {
  core.stats.reset();
  return Promise.resolve(json(200, core.stats.snapshot()));
};

const revokeKey: AdminHandler = async (core, _req, params) => {
  return Promise.resolve(core.state.revokeKey(params[0] ?? '') ? json(200, { revoked: true }) : fail(problem(404, 'no such account key')));
};

export const adminRoutes: Route<AdminHandler>[] = [
  { method: 'GET', template: '/_sim/pods', handler: listPods },
  { method: 'GET', template: '/_sim/pods/{id}/logs', handler: podLogs },
  { method: 'POST', template: '/_sim/faults', handler: armFault },
  { method: 'GET', template: '/_sim/faults', handler: listFaults },
  { method: 'DELETE', template: '/_sim/faults', handler: clearFaults },
  { method: 'GET', template: '/_sim/stats', handler: stats },
  { method: 'POST', template: '/_sim/reset-stats', handler: resetStats },
  { method: 'DELETE', template: '/_sim/keys/{key}', handler: revokeKey },
];
