// The one exponential backoff of the operator (src/runpod aside: the Runpod client knows no
// Kubernetes runtime and keeps its own retry schedule). Pure functions of the step and a random
// draw, so that a delay is testable and a caller chooses where its failure count lives.

/** `baseMs * 2^step`, capped at `maxMs`: step 0 waits `baseMs`; a huge step waits `maxMs`. */
export function exponentialDelay(baseMs: number, maxMs: number, step: number): number {
  return Math.min(maxMs, baseMs * 2 ** step);
}

/** `delayMs` plus a random share of it up to `jitter` (1: up to twice the delay), so retries spread out. */
export function jittered(delayMs: number, jitter: number, random: () => number = Math.random): number {
  return delayMs * (1 + jitter * random());
}
