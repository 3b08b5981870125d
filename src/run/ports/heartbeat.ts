// The transfer pool calls a transfer that reports no progress for --reconcile-stuck-after a stuck
// worker (/healthz fails). Some steps of a retrieval are slow and silent yet bounded by their own
// timeout (the pod hashing 100 GiB; a batch of PUTs the pod sends): they beat while they run.

/** Runs `work`, calling `progress` every `everyMs` until it settles. Only for work under its own timeout. */
export async function withHeartbeat<T>(progress: (() => void) | undefined, work: () => Promise<T>, everyMs = 10_000): Promise<T> {
  if (!progress) return work();
  const beat = setInterval(progress, everyMs);
  try {
    return await work();
  } finally {
    clearInterval(beat);
  }
}
