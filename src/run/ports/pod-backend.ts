// The Runpod side of act(), behind one small interface (crossplane-runtime's external client): the
// catalog, a create, a delete, a start, a look for a pod that may be gone, the account's spend limit. act
// judges what the answers mean; the implementation over the Runpod client only makes the calls, so
// act's table tests run on a fake (test/run/act/act.unit.test.ts).
import { isRunpodError, type CallOptions, type CreatePodRequest, type GpuTypeOffer, type Pod, type RunpodClient } from '../../runpod/index.ts';
import type { RunpodRunSpec } from '../../api/spec.ts';

export interface CatalogQuery { cloud: RunpodRunSpec['cloud']; gpuCount: number }

export interface PodBackend {
  /** Every GPU type on offer for this pod shape, with its stock. */
  catalog(query: CatalogQuery, signal?: AbortSignal): Promise<GpuTypeOffer[]>;
  /** The created pod; a refusal or a lost answer throws a RunpodError whose kind says which. */
  createPod(request: CreatePodRequest, signal?: AbortSignal): Promise<Pod>;
  /** 'notFound' on Runpod's 404 (one look's worth of evidence, not proof); any other refusal throws. */
  deletePod(podId: string, signal?: AbortSignal): Promise<'deleted' | 'notFound'>;
  /** Starts a stopped (EXITED) pod; a refusal (no GPU free on its host, its balance) throws. */
  startPod(podId: string, signal?: AbortSignal): Promise<void>;
  /** 'missing' on Runpod's 404; any other failure throws. */
  lookForPod(podId: string, signal?: AbortSignal): Promise<'found' | 'missing'>;
  /** The account's spend limit in USD/h (needs the key's account:read scope; throws without it). */
  spendLimitUsdPerHour(): Promise<number>;
  /** The registry credential named `auth.name`: found among the account's, else created (never resent: an unclear create is found by its name next time). */
  ensureRegistry(auth: { name: string; username: string; password: string }, signal?: AbortSignal): Promise<{ id: string; name: string }>;
  /** Runpod's system lines of the pod, oldest first (the replay of its log stream). */
  systemLog(podId: string, signal?: AbortSignal): Promise<string[]>;
  /** A network volume's data center and the GPU types offered there (when the catalog lists it); 'missing' on Runpod's 404. */
  networkVolume(volumeId: string, signal?: AbortSignal): Promise<{ dataCenterId: string; gpuTypes?: string[] | undefined } | 'missing'>;
}

/**
 * The pod backend of one account, over its Runpod client. `maxRateLimitWaitMs` bounds how long a call
 * waits for the account's budget: longer, it fails `rate-limited` with the wait left (the caller comes back then).
 */
export function runpodPodBackend(client: RunpodClient, limits: { maxRateLimitWaitMs?: number } = {}): PodBackend {
  const options = (signal?: AbortSignal): CallOptions => ({ maxRateLimitWaitMs: limits.maxRateLimitWaitMs, ...(signal ? { signal } : {}) });
  return {
    catalog: ({ cloud, gpuCount }, signal) => client.listGpuTypes({ cloud, gpuCount, ...options(signal) }),
    createPod: (request, signal) => client.createPod(request, options(signal)),
    deletePod: (podId, signal) => unlessNotFound(client.deletePod(podId, options(signal)), 'deleted', 'notFound'),
    startPod: async (podId, signal) => {
      await client.podAction(podId, 'start', options(signal));
    },
    lookForPod: (podId, signal) => unlessNotFound(client.getPod(podId, options(signal)), 'found', 'missing'),
    spendLimitUsdPerHour: async () => (await client.getAccountLimits(options())).spendRate,
    ensureRegistry: async ({ name, username, password }, signal) => {
      const found = (await client.listRegistries(options(signal))).find((registry) => registry.name === name);
      const registry = found ?? await client.createRegistry({ name, username, password }, options(signal));
      return { id: registry.id, name: registry.name };
    },
    systemLog: async (podId, signal) => (await client.podLogs(podId, { source: 'system', tail: 50 }, options(signal))).map((l) => l.line),
    networkVolume: async (volumeId, signal) => {
      let dataCenterId: string;
      try {
        dataCenterId = (await client.getNetworkVolume(volumeId, options(signal))).dataCenter;
      } catch (error) {
        if (isRunpodError(error, 'not-found')) return 'missing';
        throw error;
      }
      const dataCenter = (await client.listDataCenters(options(signal))).find((dc) => dc.id === dataCenterId);
      // A catalog that lists no GPU types for the data center says nothing about them.
      const offered = dataCenter?.gpuAvailability.map((stock) => stock.id) ?? [];
      return { dataCenterId, gpuTypes: offered.length > 0 ? offered : undefined };
    },
  };
}

/** `ok` once the call succeeds, `gone` on Runpod's 404; any other failure throws. */
async function unlessNotFound<T extends string>(call: Promise<unknown>, ok: T, gone: T): Promise<T> {
  try {
    await call;
    return ok;
  } catch (error) {
    if (isRunpodError(error, 'not-found')) return gone;
    throw error;
  }
}
