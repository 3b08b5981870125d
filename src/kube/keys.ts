// Object keys as client-go's MetaNamespaceKeyFunc writes them: `namespace/name`, or `name` for
// cluster-scoped objects.
import type { KubernetesObject } from '@kubernetes/client-node';

export function keyOf(obj: KubernetesObject): string {
  const name = obj.metadata?.name;
  if (!name) throw new Error('object has no metadata.name');
  const namespace = obj.metadata?.namespace;
  return namespace ? `${namespace}/${name}` : name;
}

/** `[namespace, name]`; namespace is '' for a cluster-scoped key. */
export function splitKey(key: string): [string, string] {
  const slash = key.indexOf('/');
  return slash < 0 ? ['', key] : [key.slice(0, slash), key.slice(slash + 1)];
}
