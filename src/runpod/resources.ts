// The account's resources beside pods that a run uses: its network volume (read for its data center)
// and the registry credentials private images are pulled with. Calls as the pod calls are: one rate
// limiter, one error classification, reads retried, a create never resent on an unclear outcome.
import type { CallOptions, CallSpec, RetryPolicy } from './call.ts';
import { RunpodError, type RunpodOperation } from './errors.ts';
import { registerSecret } from '../log.ts';
import { PROCESS_OWNER } from '../redaction.ts';
import {
  type CreateRegistryRequest, type NetworkVolume, type Registry,
  listRegistriesResponseSchema, networkVolumeSchema, registrySchema,
} from './schemas.ts';

export interface RunpodResources {
  /** Throws `not-found` on Runpod's 404: no such volume on this account. */
  getNetworkVolume(id: string, options?: CallOptions): Promise<NetworkVolume>;
  listRegistries(options?: CallOptions): Promise<Registry[]>;
  /** Never resent on an unclear outcome: look it up by its name in listRegistries. */
  createRegistry(request: CreateRegistryRequest, options?: CallOptions): Promise<Registry>;
  /** A 404 throws `not-found`; Runpod refuses to delete one a pod uses. */
  deleteRegistry(id: string, options?: CallOptions): Promise<void>;
}

type Call = <T>(spec: CallSpec<T>, callOptions?: CallOptions) => Promise<T>;
interface Timeouts { readMs: number; createMs: number; deleteMs: number }

const RESOURCE_ID = /^[A-Za-z0-9_-]{1,64}$/;

function resourcePath(operation: RunpodOperation, collection: string, id: string): string {
  if (!RESOURCE_ID.test(id)) throw new RunpodError({ kind: 'invalid', operation, detail: 'id must be 1-64 letters, digits, _ or -' });
  return `/${collection}/${encodeURIComponent(id)}`;
}

export function createResourceCalls(call: Call, timeouts: Timeouts, retry: RetryPolicy): RunpodResources {
  return {
    getNetworkVolume: (id, options) => call({
      operation: 'getNetworkVolume', priority: 'read',
      request: { method: 'GET', path: resourcePath('getNetworkVolume', 'network-volumes', id), timeoutMs: timeouts.readMs },
      attempts: retry.readAttempts, parse: (a) => networkVolumeSchema.parse(a.body),
    }, options),
    listRegistries: async (options) => (await call({
      operation: 'listRegistries', priority: 'read',
      request: { method: 'GET', path: '/registries', timeoutMs: timeouts.readMs },
      attempts: retry.readAttempts, parse: (a) => listRegistriesResponseSchema.parse(a.body),
    }, options)).registries,
    createRegistry: (request, options) => {
      // The password may come back in an error body: it is redacted wherever this process logs.
      registerSecret(request.password, PROCESS_OWNER);
      return call({
        operation: 'createRegistry', priority: 'create',
        request: { method: 'POST', path: '/registries', json: request, timeoutMs: timeouts.createMs },
        attempts: 1, parse: (a) => registrySchema.parse(a.body),
      }, options);
    },
    deleteRegistry: async (id, options) => {
      await call({
        operation: 'deleteRegistry', priority: 'delete',
        request: { method: 'DELETE', path: resourcePath('deleteRegistry', 'registries', id), timeoutMs: timeouts.deleteMs },
        attempts: retry.deleteAttempts, parse: () => undefined,
      }, options);
    },
  };
}
