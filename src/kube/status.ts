// Writes the status of a custom resource through its /status subresource, only when it changed, as
// a merge patch carrying the resourceVersion it was computed from: a concurrent write makes the API
// server answer 409, raised as ConflictError (the controller requeues it quietly), instead of one
// write silently undoing the other. `update` is for a change that must not be lost to a 409 (what a
// side effect learned): it re-reads the object and re-applies the change to the fresh status.
import { CustomObjectsApi, PatchStrategy, type KubeConfig } from '@kubernetes/client-node';
import { ConflictError, isApiStatus } from './errors.ts';
import { applyMergePatch, createMergePatch, jsonEqual, normalize } from './merge-patch.ts';
import { requestOptions } from './request-options.ts';

export interface CustomResource {
  group: string;
  version: string;
  plural: string;
}

/** An object as read from the API server. */
export interface Versioned {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  status?: unknown;
}

export interface StatusWriteResult<T> {
  written: boolean;
  /** The object as the API server returned it (or the input, unchanged, when nothing was written). */
  object: T;
}

/** A change of a status: given the current status, the status wanted. */
export type StatusMutation = (current: unknown) => unknown;

/** The change that turned `before` into `after`, as a mutation that re-applies it to any status (a merge patch). */
export function changeOf(before: unknown, after: unknown): StatusMutation {
  const patch = createMergePatch(normalize(before ?? {}), normalize(after ?? {}));
  return (current) => applyMergePatch(normalize(current ?? {}), patch);
}

export function objectRef(obj: Versioned, what: string): { name: string; namespace?: string; resourceVersion: string } {
  const name = obj.metadata?.name;
  const resourceVersion = obj.metadata?.resourceVersion;
  if (!name || !resourceVersion) throw new Error(`${what}: the object needs metadata.name and metadata.resourceVersion`);
  return { name, namespace: obj.metadata?.namespace || undefined, resourceVersion };
}

export class StatusWriter {
  readonly #api: CustomObjectsApi;
  readonly #resource: CustomResource;
  readonly #timeoutMs: number;

  constructor(opts: { kubeConfig: KubeConfig; resource: CustomResource; timeoutMs?: number }) {
    this.#api = opts.kubeConfig.makeApiClient(CustomObjectsApi);
    this.#resource = opts.resource;
    this.#timeoutMs = opts.timeoutMs ?? 30_000;
  }

  /**
   * Makes the stored status equal `desired` (key order aside; null or undefined members mean absent).
   * Throws ConflictError when `obj` is no longer the current version.
   */
  async write<T extends Versioned>(obj: T, desired: unknown): Promise<StatusWriteResult<T>> {
    const ref = objectRef(obj, 'status write');
    const current = normalize(obj.status ?? {});
    const wanted = normalize(desired ?? {});
    if (jsonEqual(current, wanted)) return { written: false, object: obj };
    const body = { metadata: { resourceVersion: ref.resourceVersion }, status: createMergePatch(current, wanted) };
    const options = requestOptions({ timeoutMs: this.#timeoutMs, contentType: PatchStrategy.MergePatch });
    try {
      const object = (ref.namespace
        ? await this.#api.patchNamespacedCustomObjectStatus({ ...this.#resource, namespace: ref.namespace, name: ref.name, body }, options)
        : await this.#api.patchClusterCustomObjectStatus({ ...this.#resource, name: ref.name, body }, options)) as T;
      return { written: true, object };
    } catch (err) {
      if (isApiStatus(err, 409)) {
        throw new ConflictError(`status of ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name}: resourceVersion ${ref.resourceVersion} is stale`, { cause: err });
      }
      throw err;
    }
  }

  /**
   * Writes `mutate(obj.status)`; on a 409 re-reads the object (`reread`) and applies `mutate` to the
   * fresh status, up to `attempts` writes in all. Throws the last ConflictError when every attempt
   * met one, and a ConflictError when the object is gone.
   */
  async update<T extends Versioned>(
    obj: T, mutate: StatusMutation, reread: () => Promise<T | undefined>, options: { attempts?: number; onConflict?: () => void } = {},
  ): Promise<StatusWriteResult<T>> {
    const attempts = options.attempts ?? 5;
    let current = obj;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.write(current, mutate(current.status));
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt >= attempts) throw err;
        options.onConflict?.();
        const fresh = await reread();
        if (!fresh) throw new ConflictError(`status of ${objectRef(current, 'status update').name}: the object is gone`, { cause: err });
        current = fresh;
      }
    }
  }
}
