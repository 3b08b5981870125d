// Adding and removing a finalizer without losing anyone else's: the whole finalizers list is sent
// (a merge patch replaces lists) with the resourceVersion it was computed from, so a concurrent edit
// turns into a 409 (ConflictError) rather than being overwritten. A JSON patch `test` op would also
// protect it, but the API server answers a failed test with 422 Invalid, not 409.
import { PatchStrategy, type CustomObjectsApi } from '@kubernetes/client-node';
import { ConflictError, isApiStatus, isNotFound } from './errors.ts';
import { requestOptions } from './request-options.ts';
import { objectRef, type CustomResource } from './status.ts';

export interface Finalizable {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; finalizers?: string[]; deletionTimestamp?: unknown };
}

async function patchFinalizers<T extends Finalizable>(api: CustomObjectsApi, resource: CustomResource, obj: T, finalizers: string[]): Promise<T> {
  const ref = objectRef(obj, 'finalizer update');
  const body = { metadata: { resourceVersion: ref.resourceVersion, finalizers: finalizers.length > 0 ? finalizers : null } };
  const options = requestOptions({ timeoutMs: 30_000, contentType: PatchStrategy.MergePatch });
  try {
    return (ref.namespace
      ? await api.patchNamespacedCustomObject({ ...resource, namespace: ref.namespace, name: ref.name, body }, options)
      : await api.patchClusterCustomObject({ ...resource, name: ref.name, body }, options)) as T;
  } catch (err) {
    if (isApiStatus(err, 409)) throw new ConflictError(`finalizers of ${ref.name}: resourceVersion ${ref.resourceVersion} is stale`, { cause: err });
    throw err;
  }
}

export function hasFinalizer(obj: Finalizable, finalizer: string): boolean {
  return obj.metadata?.finalizers?.includes(finalizer) ?? false;
}

/**
 * Adds `finalizer` unless present. Returns the updated object, or `obj` itself when nothing was
 * written (already there, or the object is being deleted: the API server forbids new finalizers then).
 */
export async function addFinalizer<T extends Finalizable>(api: CustomObjectsApi, resource: CustomResource, obj: T, finalizer: string): Promise<T> {
  if (hasFinalizer(obj, finalizer) || obj.metadata?.deletionTimestamp) return obj;
  return patchFinalizers(api, resource, obj, [...(obj.metadata?.finalizers ?? []), finalizer]);
}

/**
 * Removes `finalizer` if present, keeping every other one. Returns the updated object, `obj` itself
 * when nothing was written, or undefined when the object no longer exists.
 */
export async function removeFinalizer<T extends Finalizable>(api: CustomObjectsApi, resource: CustomResource, obj: T, finalizer: string): Promise<T | undefined> {
  if (!hasFinalizer(obj, finalizer)) return obj;
  try {
    return await patchFinalizers(api, resource, obj, (obj.metadata?.finalizers ?? []).filter((f) => f !== finalizer));
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
