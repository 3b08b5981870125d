// The decision at the heart of leader election, kept pure: client-go's tryAcquireOrRenew
// (tools/leaderelection/leaderelection.go) after the Lease has been read.
//
// Whether someone else's lease is still valid is judged by OUR monotonic clock: the record counts as
// live until `leaseDurationSeconds` after the moment we last saw it change. Comparing the holder's
// renewTime with our wall clock would make the election depend on clock skew between nodes.

export interface LeaderRecord {
  /** '' once released. */
  holderIdentity: string;
  leaseDurationSeconds: number;
  /** MicroTime strings as the API server returns them; only compared, never parsed. */
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions: number;
}

export type LeaseDecision =
  | { action: 'wait'; holder: string }
  | { action: 'write'; record: LeaderRecord; transition: boolean };

export function sameRecord(a: LeaderRecord | undefined, b: LeaderRecord | undefined): boolean {
  if (!a || !b) return a === b;
  return a.holderIdentity === b.holderIdentity && a.leaseDurationSeconds === b.leaseDurationSeconds
    && a.acquireTime === b.acquireTime && a.renewTime === b.renewTime && a.leaseTransitions === b.leaseTransitions;
}

export interface DecideInput {
  identity: string;
  /** The record as just read. */
  current: LeaderRecord;
  /** Local monotonic time (ms) at which we first saw `current` (i.e. it last changed). */
  observedAt: number;
  now: number;
  /** Our lease duration, written when we take or renew. */
  leaseDurationSeconds: number;
  /** MicroTime string for "now" on the wall clock, written into the record. */
  wallNow: string;
}

export function decide({ identity, current, observedAt, now, leaseDurationSeconds, wallNow }: DecideInput): LeaseDecision {
  const weHold = current.holderIdentity === identity;
  const valid = observedAt + current.leaseDurationSeconds * 1000 > now;
  if (current.holderIdentity !== '' && valid && !weHold) return { action: 'wait', holder: current.holderIdentity };
  const record: LeaderRecord = weHold
    ? { holderIdentity: identity, leaseDurationSeconds, acquireTime: current.acquireTime ?? wallNow, renewTime: wallNow, leaseTransitions: current.leaseTransitions }
    : { holderIdentity: identity, leaseDurationSeconds, acquireTime: wallNow, renewTime: wallNow, leaseTransitions: current.leaseTransitions + 1 };
  return { action: 'write', record, transition: !weHold };
}

/** The record a graceful leader leaves behind so that the next candidate takes over at once. */
export function released(current: LeaderRecord, wallNow: string): LeaderRecord {
  return { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: wallNow, renewTime: wallNow, leaseTransitions: current.leaseTransitions };
}

export interface ElectionTimings {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** client-go's JitterFactor: candidates retry after retryPeriod x (1 + up to 1.2). */
export const jitterFactor = 1.2;

/** client-go's NewLeaderElector checks. */
export function validateTimings({ leaseDurationMs, renewDeadlineMs, retryPeriodMs }: ElectionTimings): void {
  if (!(retryPeriodMs > 0)) throw new RangeError('retryPeriod must be > 0');
  if (!(leaseDurationMs > renewDeadlineMs)) throw new RangeError('leaseDuration must be greater than renewDeadline');
  if (!(renewDeadlineMs > jitterFactor * retryPeriodMs)) throw new RangeError(`renewDeadline must be greater than retryPeriod x ${jitterFactor}`);
  if (leaseDurationMs < 1000) throw new RangeError('leaseDuration must be at least 1 s (the Lease stores whole seconds)');
}
