// Pod records (every pod ever created, alive or not), API keys and GPU stock. No processes here:
// pods.ts runs them and writes what it observes into `record.container`.
import { randomBytes, randomInt } from 'node:crypto';
import { API_KEY_SCOPES, type ApiKeyScope, type GpuTypeConfig, type SimConfig } from './config.ts';

export type PodStatus = 'RUNNING' | 'EXITED' | 'ERROR';
export type DeletedBy = 'account' | 'pod' | 'vanished';
export type Cloud = 'SECURE' | 'COMMUNITY';

export interface PortMapping {
  private: number;
  type: 'tcp' | 'http';
  /** Loopback port on the machine (tcp only); null for http ports, which the simulator does not proxy. */
  public: number | null;
}

export interface PodSpec {
  name: string;
  image: string;
  args: string;
  disk: number;
  ports: string[];
  env: Record<string, string>;
  mounts: Record<string, unknown>;
  /** The registry credential the image is pulled with (create's `registry`), or null. */
  registry: string | null;
  cloud: Cloud;
  globalNetworking: boolean;
}

export interface ContainerState {
  startedAt: number;
  ports: PortMapping[];
}

/**
 * The container's ports once they are assigned: it runs and its boot delay (or slow-boot fault) has
 * passed. Whether anything listens behind them does not matter (openapi-v2.json PodSsh.direct: "Null
 * unless 22/tcp is in ports and the running pod has been assigned a public port for it").
 */
export function assignedPorts(pod: PodRecord, now = Date.now()): PortMapping[] | null {
  const container = pod.status === 'RUNNING' ? pod.container : null;
  return container && now >= pod.reachableAfter ? container.ports : null;
}

export interface PodRecord {
  id: string;
  hostId: string;
  accountKey: string;
  podKey: string;
  spec: PodSpec;
  gpuTypeId: string;
  gpuCount: number;
  dataCenterId: string;
  cudaVersion: string;
  costPerHr: number;
  status: PodStatus;
  createdAt: number;
  startedAt: number | null;
  deletedAt: number | null;
  deletedBy: DeletedBy | null;
  /** Times the container was started again after its main process exited or a restart action. */
  restarts: number;
  /** GPUs held from stock (released on stop, delete and vanish). */
  holdsStock: boolean;
  /** The running container, null while stopped, deleted or not started yet. */
  container: ContainerState | null;
  /** Earliest time the pod's ports may be reached (slow-boot fault, boot delay). */
  reachableAfter: number;
  /** slow-link fault: what the pod's TCP ports send out is paced to this many bytes per second (null: full speed). */
  linkBytesPerSecond: number | null;
  /** clock-skew fault: the pod's wall clock (its `date`) is this many seconds off the machine's (0: not skewed). */
  clockOffsetSeconds: number;
}

export type Principal =
  | { kind: 'account'; key: string; scopes: ReadonlySet<ApiKeyScope> }
  | { kind: 'pod'; key: string; podId: string };

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const KEY_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

function randomString(alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; i < length; i += 1) out += alphabet[randomInt(alphabet.length)];
  return out;
}

export class SimState {
  readonly config: SimConfig;
  readonly pods = new Map<string, PodRecord>();
  /** Account keys and the scopes each carries. */
  private readonly accountKeys: Map<string, ReadonlySet<ApiKeyScope>>;
  private readonly podKeys = new Map<string, string>();
  private readonly stock = new Map<string, Map<string, number>>();

  constructor(config: SimConfig, accountKeys: readonly string[]) {
    this.config = config;
    const every: ReadonlySet<ApiKeyScope> = new Set(API_KEY_SCOPES);
    this.accountKeys = new Map(accountKeys.map((key) => [key, every]));
    for (const scoped of config.keys) this.accountKeys.set(scoped.key, new Set(scoped.scopes));
    for (const type of config.gpuTypes) this.stock.set(type.id, new Map(Object.entries(type.stock)));
  }

  /** The account key stops authenticating (deleted in the console): 401 from then on. False when unknown. */
  revokeKey(key: string): boolean {
    return this.accountKeys.delete(key);
  }

  principal(key: string): Principal | null {
    const scopes = this.accountKeys.get(key);
    if (scopes) return { kind: 'account', key, scopes };
    const podId = this.podKeys.get(key);
    return podId === undefined ? null : { kind: 'pod', key, podId };
  }

  gpuType(id: string): GpuTypeConfig | undefined {
    return this.config.gpuTypes.find((type) => type.id === id);
  }

  freeGpus(gpuTypeId: string, dataCenterId: string): number {
    return this.stock.get(gpuTypeId)?.get(dataCenterId) ?? 0;
  }

  /** Data centers that list this type (zero stock included), in config order. */
  dataCentersOf(gpuTypeId: string): string[] {
    const perDc = this.stock.get(gpuTypeId);
    return this.config.dataCenters.map((dc) => dc.id).filter((id) => perDc?.has(id));
  }

  /** Takes `count` GPUs in the first candidate data center that has them; returns it, or null. */
  takeStock(gpuTypeId: string, candidates: readonly string[], count: number): string | null {
    const perDc = this.stock.get(gpuTypeId);
    if (!perDc) return null;
    for (const dcId of candidates) {
      const free = perDc.get(dcId) ?? 0;
      if (free >= count) {
        perDc.set(dcId, free - count);
        return dcId;
      }
    }
    return null;
  }

  releaseStock(pod: PodRecord): void {
    if (!pod.holdsStock) return;
    const perDc = this.stock.get(pod.gpuTypeId);
    perDc?.set(pod.dataCenterId, (perDc.get(pod.dataCenterId) ?? 0) + pod.gpuCount);
    pod.holdsStock = false;
  }

  retakeStock(pod: PodRecord): boolean {
    if (pod.holdsStock) return true;
    pod.holdsStock = this.takeStock(pod.gpuTypeId, [pod.dataCenterId], pod.gpuCount) !== null;
    return pod.holdsStock;
  }

  addPod(fields: Omit<PodRecord, 'id' | 'hostId' | 'podKey' | 'status' | 'createdAt' | 'startedAt' | 'deletedAt' | 'deletedBy' | 'restarts' | 'container' | 'holdsStock'>): PodRecord {
    let id = randomString(ID_ALPHABET, 14);
    while (this.pods.has(id)) id = randomString(ID_ALPHABET, 14);
    const pod: PodRecord = {
      ...fields,
      id,
      hostId: `${id}-${randomBytes(4).toString('hex')}`,
      podKey: `rpa_${randomString(KEY_ALPHABET, 40)}`,
      status: 'RUNNING',
      createdAt: Date.now(),
      startedAt: null,
      deletedAt: null,
      deletedBy: null,
      restarts: 0,
      container: null,
      holdsStock: true,
    };
    this.pods.set(id, pod);
    this.podKeys.set(pod.podKey, id);
    return pod;
  }

  /** Alive pods of an account, oldest first. */
  alivePods(accountKey: string): PodRecord[] {
    return [...this.pods.values()].filter((pod) => pod.deletedAt === null && pod.accountKey === accountKey);
  }

  /**
   * The pods GET /v2/pods shows, oldest first: alive ones once the list caught up with their create,
   * and deleted ones until it caught up with their delete (config listLag).
   */
  listedPods(accountKey: string, now = Date.now()): PodRecord[] {
    return [...this.pods.values()].filter((pod) => pod.accountKey === accountKey && this.listed(pod, now));
  }

  /** The listed pods created after `afterPodId` (all of them without it), oldest first: a page's candidates. */
  listedPodsAfter(accountKey: string, afterPodId: string | undefined, now = Date.now()): PodRecord[] {
    const all = [...this.pods.values()];
    const start = afterPodId === undefined ? 0 : all.findIndex((pod) => pod.id === afterPodId) + 1;
    return all.slice(start).filter((pod) => pod.accountKey === accountKey && this.listed(pod, now));
  }

  /** Whether the (lagging) list shows this pod now. */
  listed(pod: PodRecord, now = Date.now()): boolean {
    const lag = this.config.listLag;
    if (now < pod.createdAt + lag.createdMs) return false;
    return pod.deletedAt === null || now < pod.deletedAt + lag.deletedMs;
  }

  /** USD per hour of the account's pods that run (or boot): what the spend limit is checked against. */
  runningSpend(accountKey: string): number {
    return this.alivePods(accountKey).filter((pod) => pod.status === 'RUNNING').reduce((sum, pod) => sum + pod.costPerHr, 0);
  }

  alivePod(id: string): PodRecord | undefined {
    const pod = this.pods.get(id);
    return pod && pod.deletedAt === null ? pod : undefined;
  }

  markDeleted(pod: PodRecord, by: DeletedBy): void {
    pod.deletedAt = Date.now();
    pod.deletedBy = by;
    pod.container = null;
    this.releaseStock(pod);
  }
}
