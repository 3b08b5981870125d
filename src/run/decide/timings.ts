// Every wait and bound the run's loop keeps, named, each with its reason: what decide waits before it
// looks again or gives up, and the few bounds act and memory keep beside it. `defaultTimings` are the
// production values; a test's world passes compressed ones (DecideSettings.timings), so that a test
// of "a pod missing for longer than the list may lag" need not wait out the minute Runpod's lists lag.
import { VERDICT_BOUND_SECONDS, VERDICT_LAST_CALL_SECONDS } from '../../pod/protocol.ts';

export interface Timings {
  /** How long a new pod may be missing from Runpod's lists (API-NOTES S6: seconds) before absence is evidence. */
  newPodListLagToleranceMs: number;
  /** Spacing between the looks that confirm a deleted pod is gone (after Runpod answered its delete). */
  lookSpacingMs: number;
  /**
   * How long a deleted pod may stay in Runpod's list while every GET of it answers 404 (the list lags
   * behind deletes) before the GETs' word is taken: the run must not wait on a stale list forever.
   */
  deletedListLagToleranceMs: number;
  /**
   * Spacing between the looks that judge a pod gone on its own (nobody here deleted it): Runpod's GET
   * can answer 404 for a live pod for a few seconds, so three 404s must span 20 s (as the reference does).
   */
  goneLookSpacingMs: number;
  /** How long a pod started again may stay EXITED in the lists before it is given up and deleted. */
  startAgainBoundMs: number;
  /** How long a cancelled run may keep its pod to retrieve what results exist (at most retrieveGraceSeconds). */
  cancelRetrieveBoundMs: number;
  /** The least a retrieve-grace renewal reaches ahead (it reaches six polls when those are longer); renewed once half is left. */
  graceRenewalMinMs: number;
  /** After a spend-limit refusal, no resend sooner than this even when the list shows room (lists lag). */
  spendRetrySpacingMs: number;
  /** After a spend-limit refusal whose figures are unknown (no account:read, no price): resend this often. */
  spendBlindRetryMs: number;
  /** A 429 without a usable Retry-After. */
  defaultRateLimitWaitMs: number;
  /** A capacity wait's rounds: the backoff grows with the wait (half of it so far) between these, jittered. */
  capacityRetryMinMs: number;
  capacityRetryMaxMs: number;
  /** A pod still found this long after its delete was sent: the delete did not take, it is sent again. */
  resendUnconfirmedDeleteMs: number;
  /**
   * Longest a reconcile waits inside a worker for its account's Runpod budget (a slot, or a Retry-After):
   * longer waits are waited out in the queue, so that one account's 429 storm never holds the workers.
   */
  workerRateLimitWaitMs: number;
  /**
   * A run waiting on what sends no event (nothing watches Secrets: a key missing or malformed, a blocked
   * cleanup) backs off through the queue's rate limiter, but looks again at least this often, so a
   * Secret created or fixed is noticed within it.
   */
  unwatchedRecheckMaxMs: number;
  /**
   * While a pod has no SSH port, its system lines (image pull, container start) are read this long after
   * its create (a pull usually says by then whether it failed), then every systemLogReadEveryMs: one
   * request each, within the account's budget.
   */
  systemLogFirstReadMs: number;
  systemLogReadEveryMs: number;
}

export const defaultTimings: Readonly<Timings> = {
  newPodListLagToleranceMs: 60_000,
  lookSpacingMs: 2000,
  deletedListLagToleranceMs: 5 * 60_000,
  goneLookSpacingMs: 10_000,
  startAgainBoundMs: 60_000,
  cancelRetrieveBoundMs: 10 * 60_000,
  graceRenewalMinMs: 120_000,
  spendRetrySpacingMs: 10_000,
  spendBlindRetryMs: 60_000,
  defaultRateLimitWaitMs: 30_000,
  capacityRetryMinMs: 10_000,
  capacityRetryMaxMs: 300_000,
  resendUnconfirmedDeleteMs: 30_000,
  workerRateLimitWaitMs: 5000,
  unwatchedRecheckMaxMs: 30_000,
  systemLogFirstReadMs: 20_000,
  systemLogReadEveryMs: 60_000,
};

/**
 * How long after readiness the controller waits for the bootstrap's and the watchdog's verdicts: the
 * watchdog probes for VERDICT_BOUND_SECONDS (its create env says so) and gives its verdict by its last
 * call's end; past this (+ the margin) it is broken. Never shorter than the watchdog's own bound, so
 * not a timing a test may compress here.
 */
export const verdictBoundMs = (VERDICT_BOUND_SECONDS + VERDICT_LAST_CALL_SECONDS) * 1000;

/** How far ahead a renewal reaches: a few polls (graceRenewalMinMs at least); it is renewed once half is left. */
export const graceRenewalMs = (timings: Timings, pollIntervalMs: number): number => Math.max(timings.graceRenewalMinMs, 6 * pollIntervalMs);

// Bounds of the process's memory of an account's spend (memory/spend-room.ts), not of one run's loop.

/** A list taken this long after a claim shows its pod if it was created (list lag, one poll), and counts its cost. */
export const claimVisibleAfterMs = 20_000;

/** A figure learned this long ago is read again (by the next refusal): the user may have raised the limit. */
export const figuresFreshForMs = 5 * 60_000;

/** A refusal this recent gates every create of the account: twice the blind resend spacing of waiting runs. */
export const limitedForMs = 2 * defaultTimings.spendBlindRetryMs;
