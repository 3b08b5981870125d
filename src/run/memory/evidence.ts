// What this process learned about runs and their pods that no status records: the evidence on each
// pod's deletion (deletes sent, 404s, lists without it), each run's GPU catalog and its failed retrievals (the spend-limit
// figures are the account's: spend-room.ts). decide() reads it back through the observation; act adds to it.
// Per process: a restart starts over, which costs looks and calls, never a wrong verdict.
import type { Deletion, GpuCandidate } from '../decide/model.ts';

export class RunEvidence {
  /** By pod id: a pod outlives the run's view of it (strays, a run deleted while its pod is). */
  readonly #deletions = new Map<string, Deletion>();
  /** By run uid, as the rest. */
  readonly #catalogs = new Map<string, GpuCandidate[]>();
  readonly #retrievalFailures = new Map<string, { count: number; lastAt: Date }>();

  /** The evidence on a pod's deletion, or a fresh record; changes count once handed to recordDeletion. */
  deletion(podId: string): Deletion {
    return this.#deletions.get(podId) ?? { notFoundLooks: 0 };
  }

  recordDeletion(podId: string, deletion: Deletion): void {
    this.#deletions.set(podId, deletion);
  }

  /** Every pod's deletion evidence, as the observation carries it (a copy of the index). */
  deletions(): Record<string, Deletion> {
    return Object.fromEntries(this.#deletions);
  }

  /**
   * What a complete pod list (begun at `listedAt`) says of the pods whose deletion is pending
   * (`pending`, ids). A list that began after a pod's delete was sent and does not show it is one look
   * that the pod is gone, as a GET answering 404 is, at no call of its own: the list is shared by every
   * run. Lists count as looks spaced at least `spacingMs` apart; one that shows the pod again starts them
   * over (a deleted pod may stay listed for a while, it never comes back).
   * And 404s count only in a row: a list that started after a pod's last 404 and still shows it wipes the
   * 404s of a pod that nobody deleted (Runpod's GET flaps). A pod whose delete was sent keeps them: a
   * deleted pod stays listed for a while (the list lags behind deletes, decide tolerates that).
   */
  noteList(listedPodIds: ReadonlySet<string>, listedAt: Date, pending: Iterable<string>, spacingMs: number): void {
    for (const podId of listedPodIds) {
      const deletion = this.#deletions.get(podId);
      if (!deletion || deletion.sentAt || !deletion.lookedAt || deletion.lookedAt >= listedAt) continue;
      this.#deletions.delete(podId);
    }
    for (const podId of pending) {
      const deletion = this.#deletions.get(podId);
      if (!deletion?.sentAt || listedAt <= deletion.sentAt) continue;
      if (listedPodIds.has(podId)) {
        if (deletion.listLooks) this.#deletions.set(podId, { ...deletion, listLooks: 0 });
        continue;
      }
      if (deletion.listLookAt && listedAt.getTime() < deletion.listLookAt.getTime() + spacingMs) continue;
      this.#deletions.set(podId, { ...deletion, listLooks: (deletion.listLooks ?? 0) + 1, listLookAt: listedAt });
    }
  }

  catalog(runUid: string): GpuCandidate[] | undefined {
    return this.#catalogs.get(runUid);
  }

  recordCatalog(runUid: string, candidates: GpuCandidate[]): void {
    this.#catalogs.set(runUid, candidates);
  }

  retrievalFailures(runUid: string): number {
    return this.#retrievalFailures.get(runUid)?.count ?? 0;
  }

  lastRetrievalFailureAt(runUid: string): Date | undefined {
    return this.#retrievalFailures.get(runUid)?.lastAt;
  }

  /** A retrieval that did not verify, at `at` (its try count and time space and bound the next ones). */
  retrievalFailed(runUid: string, at: Date): void {
    this.#retrievalFailures.set(runUid, { count: this.retrievalFailures(runUid) + 1, lastAt: at });
  }

  retrievalVerified(runUid: string): void {
    this.#retrievalFailures.delete(runUid);
  }

  /** The run is gone (its finalizer removed): what is known of it and of its pods goes too. */
  forgetRun(runUid: string, podIds: Iterable<string>): void {
    this.#catalogs.delete(runUid);
    this.#retrievalFailures.delete(runUid);
    for (const podId of podIds) this.#deletions.delete(podId);
  }
}
