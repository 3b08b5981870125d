// Which Runpod pods this install owns. One Runpod account may serve several installs on one
// cluster (say one per team, each with --namespace), and they share the cluster id: the cluster id
// alone cannot tell their pods apart. So every pod carries both markers, and an install owns a pod
// only when both match exactly. The rule is deliberately exact: a cluster-wide install does not own
// a namespace-scoped install's pods (nor the reverse), and a pod without a scope marker (made before
// the marker existed, or by hand) is nobody's to sweep. Pods this install does not own are never
// judged by its sweeper, whatever their name; the watchdog still bounds them.
import { createHash } from 'node:crypto';
import { POD_ENV } from '../pod/protocol.ts';

/** The scope marker of an install that watches every namespace. Not a namespace name (those have no "/"). */
const clusterWideScope = 'cluster-wide';

export interface Owner {
  clusterId: string;
  /** `namespace/<ns>` for an install started with --namespace, else `cluster-wide`; `/selector-<hash>` after it with --selector. */
  scope: string;
}

/**
 * The scope marker of an install started with this --namespace (or none) and --selector (or none): two
 * shards of one namespace (disjoint selectors) own their pods apart, as two namespaces' installs do. The
 * selector goes in as a hash: its words (spaces, "=", "!", parentheses) are nothing a pod's env should carry.
 */
export function installScope(namespace: string | undefined, selector?: string): string {
  const scope = namespace ? `namespace/${namespace}` : clusterWideScope;
  return selector ? `${scope}/selector-${selectorHash(selector)}` : scope;
}

/** The first 12 hex digits of the selector's SHA-256, as the scope marker carries it. */
const selectorHash = (selector: string): string => createHash('sha256').update(selector).digest('hex').slice(0, 12);

/**
 * The run a pod of this cluster belongs to (its run marker), for the account's observer: a pod without
 * the cluster's marker is never a run's, whatever its name.
 */
export function runOfPod(clusterId: string): (pod: { env: Readonly<Record<string, string | undefined>> }) => string | undefined {
  return (pod) => (pod.env[POD_ENV.cluster] === clusterId ? pod.env[POD_ENV.run] || undefined : undefined);
}

/** True when the pod's markers say this install made it. */
export function ownsPod(owner: Owner, env: Readonly<Record<string, string | undefined>>): boolean {
  return env[POD_ENV.cluster] === owner.clusterId && env[POD_ENV.scope] === owner.scope;
}
