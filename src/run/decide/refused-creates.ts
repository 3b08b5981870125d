// Refused creates: Runpod said no before creating anything (a 429, or the account spend limit), so
// the same attempt may be sent again, later. Pure: decide() asks when, and what the run says meanwhile.
//
// - RateLimited waits out Retry-After and never ends the run (the window always reopens).
// - SpendLimited waits until the account's running pods leave room for this one (judged from the
//   shared pod list and GET /v2/account/limits), or until spec.limits.queueTimeoutSeconds has passed
//   since the wait began; then the run ends Failed/NoCapacity. Every GPU type would be refused the
//   same way, so the wait is never a reason to try the next type.
import type { Reason, RunpodRunStatus } from '../../api/status.ts';
import type { Observation, SpendFacts } from './model.ts';

type Attempt = NonNullable<RunpodRunStatus['attempts']>[number];

export type RefusedVerdict =
  | { kind: 'wait'; afterMs: number; reason: Reason; message: string }
  | { kind: 'resend' }
  | { kind: 'timedOut'; message: string };

export const isRefused = (attempt: Attempt | undefined): boolean =>
  attempt?.outcome === 'RateLimited' || attempt?.outcome === 'SpendLimited';

const usd = (value: number): string => `$${value.toFixed(2)}/h`;
const cents = (value: number): number => Math.round(value * 100);

/** "account spend limit $80.00/h, running pods $79.31/h, this pod needs $0.69/h", with what is known. */
export function headroom(spend: SpendFacts | undefined): string {
  const parts = [
    spend?.limitUsdPerHour === undefined ? 'account spend limit not known yet (or the key cannot read GET /v2/account/limits)' : `account spend limit ${usd(spend.limitUsdPerHour)}`,
    spend?.runningUsdPerHour === undefined ? undefined : `running pods ${usd(spend.runningUsdPerHour)}`,
    spend?.podUsdPerHour === undefined ? undefined : `this pod needs ${usd(spend.podUsdPerHour)}`,
  ];
  return parts.filter((part) => part !== undefined).join(', ');
}

/** Whether the figures say the pod now fits under the limit; undefined when a figure is missing. */
function roomFor(spend: SpendFacts | undefined): boolean | undefined {
  if (spend?.limitUsdPerHour === undefined || spend.runningUsdPerHour === undefined || spend.podUsdPerHour === undefined) return undefined;
  return cents(spend.runningUsdPerHour + spend.podUsdPerHour) <= cents(spend.limitUsdPerHour);
}

export function judgeRefusedAttempt(obs: Observation, status: RunpodRunStatus, attempt: Attempt, queueTimeoutSeconds: number): RefusedVerdict {
  const now = obs.now.getTime();
  const retryAt = Date.parse(attempt.retryAfter ?? '') || now;
  if (attempt.outcome === 'RateLimited') {
    if (now >= retryAt) return { kind: 'resend' };
    return {
      kind: 'wait', afterMs: retryAt - now, reason: 'RateLimited',
      message: `Runpod's rate limit refused the create of pod ${attempt.name}; sending it again at ${new Date(retryAt).toISOString()} (Retry-After)`,
    };
  }
  const since = Date.parse(status.waitingSince ?? '') || now;
  const until = since + queueTimeoutSeconds * 1000;
  const figures = headroom(obs.spend);
  if (now >= until) {
    return { kind: 'timedOut', message: `the account spend limit left no room for pod ${attempt.name} within spec.limits.queueTimeoutSeconds (${queueTimeoutSeconds}s): ${figures}` };
  }
  const room = roomFor(obs.spend);
  const waiting = `waiting for running pods to free room until ${new Date(until).toISOString()} (spec.limits.queueTimeoutSeconds)`;
  if (room === false) {
    return { kind: 'wait', afterMs: Math.min(obs.settings.pollIntervalMs, until - now), reason: 'SpendLimitReached', message: `${figures}; ${waiting}` };
  }
  if (now >= retryAt) return { kind: 'resend' };
  return {
    kind: 'wait', afterMs: Math.min(retryAt - now, until - now), reason: 'SpendLimitReached',
    message: room === true ? `${figures}; room has freed, sending the create again at ${new Date(retryAt).toISOString()}` : `${figures}; ${waiting}, trying again at ${new Date(retryAt).toISOString()}`,
  };
}

/** When a refused attempt may be sent again: Retry-After for a 429; for the spend limit, by what the figures say. */
export function retryAfterRefusal(obs: Observation, kind: 'rate-limited' | 'spend-limit', retryAfterMs: number | undefined, spend: SpendFacts | undefined): Date {
  if (kind === 'rate-limited') return new Date(obs.now.getTime() + Math.max(1000, retryAfterMs ?? obs.settings.timings.defaultRateLimitWaitMs));
  return new Date(obs.now.getTime() + (roomFor(spend) === undefined ? obs.settings.timings.spendBlindRetryMs : obs.settings.timings.spendRetrySpacingMs));
}

// --- no capacity on any type ----------------------------------------------------------------------
// Stock frees by the minute: when every GPU type was refused for capacity the run waits (nothing is
// created, nothing bills) and walks the same attempts again, in place, after a backoff that grows
// with the wait (half of it so far, 10 s to 5 min, jittered so runs refused together spread out),
// until spec.limits.queueTimeoutSeconds has passed since the wait began (status.waitingSince).

/** When the next walk over the types may start. Pure: the jitter is drawn from the run and the moment. */
export function nextCapacityRound(obs: Observation, waitingSince: number): Date {
  const now = obs.now.getTime();
  const base = Math.min(obs.settings.timings.capacityRetryMaxMs, Math.max(obs.settings.timings.capacityRetryMinMs, (now - waitingSince) / 2));
  const jitter = 0.8 + 0.4 * unitHash(`${obs.run.uid}/${now}`);
  return new Date(now + Math.round(base * jitter));
}

/** The end of the wait for capacity (or for room under the spend limit): waitingSince + queueTimeoutSeconds. */
export function queueDeadline(status: RunpodRunStatus, now: number, queueTimeoutSeconds: number): number {
  return (Date.parse(status.waitingSince ?? '') || now) + queueTimeoutSeconds * 1000;
}

/** FNV-1a of the text, as a number in [0, 1). */
function unitHash(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash / 2 ** 32;
}
