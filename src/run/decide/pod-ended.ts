// What a run's status says about a pod that ended before the run did: the words for its PodLost
// message, and the reason a watchdog's failed delete stands for. Pure; used by decide().
import type { Reason, RunpodRunStatus } from '../../api/status.ts';
import type { DeleteFailure } from '../../pod/index.ts';

/** The last known state of the job and its results, for a message that says what is lost and what is not. */
export function whatIsKnown(status: RunpodRunStatus): string {
  const job = status.job;
  const results = status.results?.retrievedAt ? `its results were retrieved to ${status.results.location ?? '?'}` : 'no results were retrieved';
  if (!job?.startedAt) return `the job had not started; ${results}`;
  if (job.exitCode === undefined) return `the job started at ${job.startedAt} and was running when last seen (no exit code recorded); ${results}`;
  const when = job.finishedAt ? ` at ${job.finishedAt}` : '';
  return `the job started at ${job.startedAt} and exited with code ${job.exitCode}${when}; ${results}`;
}

/** The run's end when its watchdog wanted the pod gone by `rule` and could not delete it. */
export function reasonOfDeleteRule(failure: DeleteFailure, status: RunpodRunStatus): Reason {
  switch (failure.rule) {
    case 'bootstrap':
    case 'config':
      return 'BootFailed';
    case 'deadline':
      return 'DeadlineExceeded';
    case 'cost-cap':
    case 'price-unknown':
      return 'CostCapReached';
    case 'boot-grace':
      return 'BootTimeout';
    case 'retrieve-grace':
      return 'ResultsUnverified';
    case 'retrieved':
      // The controller writes the marker only after verifying: its status may just not show it yet.
      return status.results?.retrievedAt ? 'Succeeded' : 'ResultsUnverified';
    case 'unknown':
      return 'PodLost';
  }
}
