// A LeaderRecord in a Lease's spec, and back: the API server wants MicroTime (6 fractional digits),
// and a time it gave us is written back exactly as it was.
import { V1MicroTime, type V1Lease } from '@kubernetes/client-node';
import type { LeaderRecord } from './leader-record.ts';

/** Times in a Lease must be MicroTime (6 fractional digits); a plain Date is rejected by the API server. */
export function microNow(): string {
  return new V1MicroTime().toISOString();
}

/** On read, client-node leaves MicroTime fields as strings although its types say V1MicroTime. */
function timeString(value: unknown): string | undefined {
  if (value instanceof Date) return value.toISOString();
  return typeof value === 'string' ? value : undefined;
}

export function recordOf(lease: V1Lease): LeaderRecord {
  const spec = lease.spec ?? {};
  return {
    holderIdentity: spec.holderIdentity ?? '',
    leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
    acquireTime: timeString(spec.acquireTime),
    renewTime: timeString(spec.renewTime),
    leaseTransitions: spec.leaseTransitions ?? 0,
  };
}

export function specOf(record: LeaderRecord): NonNullable<V1Lease['spec']> {
  const micro = (s: string | undefined): V1MicroTime | undefined => (s === undefined ? undefined : toMicroTime(s));
  return {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    acquireTime: micro(record.acquireTime),
    renewTime: micro(record.renewTime),
    leaseTransitions: record.leaseTransitions,
  };
}

/** A V1MicroTime that serialises back to exactly `s` (keeps microseconds the server gave us). */
function toMicroTime(s: string): V1MicroTime {
  const t = new V1MicroTime(s);
  t.toISOString = () => s;
  return t;
}
