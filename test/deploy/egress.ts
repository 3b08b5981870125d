// What a set of NetworkPolicies lets one pod send, evaluated as the API documents it
// (networking.k8s.io/v1): a pod selected by no policy with Egress is unrestricted; otherwise a
// connection is allowed when some rule of a policy selecting it matches both the port and a peer
// (no `to`: any peer; namespaceSelector and/or podSelector; ipBlock with its exceptions).
import type { Manifest } from './render.ts';

interface Selector { matchLabels?: Record<string, string>; matchExpressions?: unknown[] }
interface Peer { namespaceSelector?: Selector; podSelector?: Selector; ipBlock?: { cidr: string; except?: string[] } }
interface Rule { to?: Peer[]; ports?: { port?: number | string; endPort?: number; protocol?: string }[] }
interface PolicySpec { podSelector: Selector; policyTypes?: string[]; egress?: Rule[] }

export interface Pod { namespace: string; labels: Record<string, string> }
export interface Destination { ip: string; port: number; pod?: { namespace: string; namespaceLabels: Record<string, string>; labels: Record<string, string> } }

function selects(selector: Selector | undefined, labels: Record<string, string>): boolean {
  if (selector?.matchExpressions?.length) throw new Error('matchExpressions: not evaluated here');
  return Object.entries(selector?.matchLabels ?? {}).every(([key, value]) => labels[key] === value);
}

const ipNumber = (ip: string): number => ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
function inCidr(ip: string, cidr: string): boolean {
  const [base = '', bits = '32'] = cidr.split('/');
  const size = 2 ** (32 - Number(bits));
  return Math.floor(ipNumber(ip) / size) === Math.floor(ipNumber(base) / size);
}

function peerMatches(peer: Peer, policyNamespace: string, to: Destination): boolean {
  if (peer.ipBlock) return inCidr(to.ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((cidr) => inCidr(to.ip, cidr));
  if (!to.pod) return false;
  const namespaceOk = peer.namespaceSelector ? selects(peer.namespaceSelector, to.pod.namespaceLabels) : to.pod.namespace === policyNamespace;
  return namespaceOk && selects(peer.podSelector, to.pod.labels);
}

function portMatches(rule: Rule, port: number): boolean {
  if (!rule.ports?.length) return true;
  return rule.ports.some((p) => (p.protocol ?? 'TCP') === 'TCP' && typeof p.port === 'number' && port >= p.port && port <= (p.endPort ?? p.port));
}

/** Whether the NetworkPolicies among `manifests` let `from` open a TCP connection to `to`. */
export function allowsEgress(manifests: Manifest[], from: Pod, to: Destination): boolean {
  const policies = manifests.filter((m) => m.kind === 'NetworkPolicy' && (m.metadata.namespace ?? 'default') === from.namespace)
    .map((m) => ({ namespace: from.namespace, spec: (m as unknown as { spec: PolicySpec }).spec }))
    .filter(({ spec }) => selects(spec.podSelector, from.labels) && (spec.policyTypes ?? ['Ingress']).includes('Egress'));
  if (policies.length === 0) return true;
  return policies.some(({ namespace, spec }) => (spec.egress ?? []).some((rule) =>
    portMatches(rule, to.port) && (!rule.to?.length || rule.to.some((peer) => peerMatches(peer, namespace, to)))));
}
