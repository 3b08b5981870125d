// Every wait and bound the run's loop keeps, named, each with its reason: what decide waits before it
// looks again or gives up, and the few bounds act and memory keep beside it. Production defaults.
import { VERDICT_BOUND_SECONDS, VERDICT_LAST_CALL_SECONDS } from '../../pod/protocol.ts';

/** How long a new pod may be missing from Runpod's lists (API-NOTES S6: seconds) before absence is evidence. */
export const newPodListLagToleranceMs = 60_000;

/** Spacing between the looks that confirm a deleted pod is gone (after Runpod answered its delete). */
export const lookSpacingMs = 2000;

/**
 * How long a deleted pod may stay in Runpod's list while every GET of it answers 404 (the list lags
 * behind deletes) before the GETs' word is taken: the run must not wait on a stale list forever.
 */
export const deletedListLagToleranceMs = 5 * 60_000;

/**
 * Spacing between the looks that judge a pod gone on its own (nobody here deleted it): Runpod's GET
 * can answer 404 for a live pod for a few seconds, so three 404s must span 20 s (as the reference does).
 */
export const goneLookSpacingMs = 10_000;

/** How long a pod started again may stay EXITED in the lists before it is given up and deleted. */
export const startAgainBoundMs = 60_000;

/** How long a cancelled run may keep its pod to retrieve what results exist (at most retrieveGraceSeconds). */
export const cancelRetrieveBoundMs = 10 * 60_000;

/**
 * How long after readiness the controller waits for the bootstrap's and the watchdog's verdicts: the
 * watchdog probes for VERDICT_BOUND_SECONDS (its create env says so) and gives its verdict by its last
 * call's end; past this (+ the margin) it is broken. Never shorter than the watchdog's own bound.
 */
export const verdictBoundMs = (VERDICT_BOUND_SECONDS + VERDICT_LAST_CALL_SECONDS) * 1000;

/** How far ahead a renewal reaches: a few polls (two minutes at least); it is renewed once half is left. */
export const graceRenewalMs = (pollIntervalMs: number): number => Math.max(120_000, 6 * pollIntervalMs);

/** After a spend-limit refusal, no resend sooner than this even when the list shows room (lists lag). */
export const spendRetrySpacingMs = 10_000;

/** After a spend-limit refusal whose figures are unknown (no account:read, no price): resend this often. */
export const spendBlindRetryMs = 60_000;

/** A 429 without a usable Retry-After. */
export const defaultRateLimitWaitMs = 30_000;

/** A capacity wait's rounds: the backoff grows with the wait (half of it so far) between these, jittered. */
export const capacityRetryMinMs = 10_000;
export const capacityRetryMaxMs = 300_000;

/** A pod still found this long after its delete was sent: the delete did not take, it is sent again. */
export const resendUnconfirmedDeleteMs = 30_000;

/** A list taken this long after a claim shows its pod if it was created (list lag, one poll), and counts its cost. */
export const claimVisibleAfterMs = 20_000;

/** A figure learned this long ago is read again (by the next refusal): the user may have raised the limit. */
export const figuresFreshForMs = 5 * 60_000;

/** A refusal this recent gates every create of the account: twice the blind resend spacing of waiting runs. */
export const limitedForMs = 2 * spendBlindRetryMs;

/**
 * Longest a reconcile waits inside a worker for its account's Runpod budget (a slot, or a Retry-After):
 * longer waits are waited out in the queue, so that one account's 429 storm never holds the workers.
 */
export const workerRateLimitWaitMs = 5000;
