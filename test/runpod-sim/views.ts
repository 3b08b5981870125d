// The JSON the v2 API serves: Pod, GPU types and data centers, in openapi-v2.json's shapes.
import type { DataCenterConfig, GpuTypeConfig, SimConfig } from './config.ts';
import { assignedPorts, type Cloud, type PodRecord, type SimState } from './state.ts';

export type AvailabilityLevel = 'NONE' | 'LOW' | 'MEDIUM' | 'HIGH';

/** The status the API reports: the record's, or during boot PROVISIONING / STARTING (config pods.statusFlow). */
export type ApiPodStatus = 'PROVISIONING' | 'STARTING' | PodRecord['status'];
export type StatusFlow = SimConfig['pods']['statusFlow'];

const actionsByStatus: Record<ApiPodStatus, string[]> = {
  PROVISIONING: ['stop', 'terminate'],
  STARTING: ['stop', 'terminate'],
  RUNNING: ['stop', 'restart', 'terminate'],
  EXITED: ['start', 'terminate'],
  ERROR: ['start', 'terminate'],
};

export function apiStatus(pod: PodRecord, flow: StatusFlow, now = Date.now()): ApiPodStatus {
  if (pod.status !== 'RUNNING' || flow === 'running-at-once') return pod.status;
  // No container has run yet: still placing and pulling. One that restarts after a crash is STARTING again.
  if (pod.startedAt === null) return 'PROVISIONING';
  return assignedPorts(pod, now) === null ? 'STARTING' : 'RUNNING';
}

export function allowedActions(pod: PodRecord, flow: StatusFlow, now = Date.now()): string[] {
  return actionsByStatus[apiStatus(pod, flow, now)];
}

export function podView(pod: PodRecord, flow: StatusFlow, now = Date.now()): Record<string, unknown> {
  const status = apiStatus(pod, flow, now);
  // openapi-v2.json: runtime is null unless RUNNING, and so is ssh.direct (no public port before).
  const ports = status === 'RUNNING' ? assignedPorts(pod, now) : null;
  const sshPort = ports?.find((port) => port.private === 22 && port.type === 'tcp')?.public;
  return {
    id: pod.id,
    name: pod.spec.name,
    image: pod.spec.image,
    args: pod.spec.args,
    disk: pod.spec.disk,
    ports: pod.spec.ports,
    env: pod.spec.env,
    registry: pod.spec.registry,
    status,
    actions: actionsByStatus[status],
    mounts: pod.spec.mounts,
    gpu: { id: pod.gpuTypeId, count: pod.gpuCount },
    cloud: pod.spec.cloud,
    dataCenterId: pod.dataCenterId,
    cudaVersion: pod.cudaVersion,
    // No Runpod SSH proxy exists here; the spec allows null and clients must use `direct`.
    ssh: {
      proxy: null,
      direct: sshPort == null ? null : { host: '127.0.0.1', port: sshPort, username: 'root', command: `ssh root@127.0.0.1 -p ${sshPort}` },
    },
    template: null,
    // Measured on the live service: cost stays set after a stop (the spec says 0.0).
    cost: pod.costPerHr,
    locked: false,
    globalNetworking: { enabled: pod.spec.globalNetworking },
    runtime: ports && pod.container
      ? {
          uptime: Math.max(0, Math.floor((now - pod.container.startedAt) / 1000)),
          gpus: Array.from({ length: pod.gpuCount }, () => ({ util: 0, memoryUtil: 0 })),
          cpu: { util: 0 },
          memory: { util: 0 },
          ports: ports.map((port) => ({
            private: port.private,
            public: port.public,
            type: port.type,
            ip: port.type === 'tcp' ? '127.0.0.1' : null,
          })),
        }
      : null,
    createdAt: new Date(pod.createdAt).toISOString(),
    startedAt: pod.startedAt === null ? null : new Date(pod.startedAt).toISOString(),
  };
}

/** Stock level as the catalog words it: how many pods of `count` GPUs still fit. */
export function availabilityLevel(freeGpus: number, count: number): AvailabilityLevel {
  const pods = Math.floor(freeGpus / Math.max(1, count));
  if (pods <= 0) return 'NONE';
  if (pods <= 2) return 'LOW';
  if (pods <= 5) return 'MEDIUM';
  return 'HIGH';
}

const rank: Record<AvailabilityLevel, number> = { NONE: 0, LOW: 1, MEDIUM: 2, HIGH: 3 };

export function offeredOn(type: GpuTypeConfig, cloud: Cloud): boolean {
  return cloud === 'SECURE' || type.pricePerHour.community !== null;
}

export interface GpuQuery {
  availability: boolean;
  pod: boolean;
  count: number;
  cloud: Cloud;
}

export function gpuTypeView(state: SimState, type: GpuTypeConfig, query: GpuQuery): Record<string, unknown> {
  const community = type.pricePerHour.community;
  const view: Record<string, unknown> = {
    id: type.id,
    name: type.displayName,
    pool: null,
    manufacturer: type.manufacturer ?? (type.id.startsWith('NVIDIA') ? 'NVIDIA' : type.id.startsWith('AMD') ? 'AMD' : 'UNKNOWN'),
    memory: type.memoryInGb,
    secure: true,
    community: community !== null,
    price: { secure: type.pricePerHour.secure, community: community ?? 0 },
    maxCount: { secure: type.maxCount, community: community === null ? 0 : type.maxCount },
  };
  if (!query.availability) return view;
  const perDc = state.dataCentersOf(type.id).map((dcId) => ({
    id: dcId,
    name: state.config.dataCenters.find((dc) => dc.id === dcId)?.name ?? dcId,
    availability:
      query.pod && offeredOn(type, query.cloud) && query.count <= type.maxCount
        ? availabilityLevel(state.freeGpus(type.id, dcId), query.count)
        : 'NONE',
  }));
  const overall = perDc.reduce<AvailabilityLevel>((best, dc) => (rank[dc.availability] > rank[best] ? dc.availability : best), 'NONE');
  view.availability = overall;
  const available = perDc.filter((dc) => dc.availability !== 'NONE');
  if (available.length > 0) view.dataCenters = available;
  view.cudaVersions = [{ version: type.cudaVersion, available: overall !== 'NONE' }];
  return view;
}

export function dataCenterView(state: SimState, dc: DataCenterConfig, withGpuAvailability: boolean): Record<string, unknown> {
  const view: Record<string, unknown> = {
    id: dc.id,
    name: dc.name,
    region: dc.region,
    globalNetwork: dc.globalNetwork,
    networkVolumeTypes: dc.networkVolumeTypes,
    compliance: dc.compliance,
  };
  if (withGpuAvailability) {
    const gpus = state.config.gpuTypes
      .filter((type) => state.dataCentersOf(type.id).includes(dc.id))
      .map((type) => ({ id: type.id, name: type.displayName, availability: availabilityLevel(state.freeGpus(type.id, dc.id), 1) }));
    if (gpus.length > 0) view.gpuAvailability = gpus;
  }
  return view;
}
