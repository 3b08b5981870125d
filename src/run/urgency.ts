// Which run a worker takes first when many are ready at once. After a restart the reflector's first
// list queues every run at once, in name order, and a long history of ended runs would hold back the
// run whose pod must go or whose results wait on it while the controller is away: that pod bills
// now, and its retrieve grace and deadline keep running. Higher goes first (kube/priority-fifo.ts).
import { parseSpec, type RunpodRun } from '../api/runpodrun.ts';

export const URGENCY = {
  /** Ended, its pod confirmed gone (or never made), not being deleted: it needs only a look. */
  settled: -1,
  /** Everything else: provisioning, a job running. */
  working: 0,
  /** A pod bills that must go or whose results wait: ended or deleted or cancelled, the job over, past its deadline; or a create whose answer is in doubt. */
  billing: 1,
} as const;

/** `now` is wall time: it is compared with the status's pod deadline. An unknown run (deleted) is working. */
export function urgencyOf(run: RunpodRun | undefined, now: Date): number {
  if (!run) return URGENCY.working;
  const status = run.status ?? {};
  const pod = status.pod;
  const ended = status.phase === 'Succeeded' || status.phase === 'Failed';
  const deleting = run.metadata.deletionTimestamp !== undefined;
  if (pod?.id !== undefined && pod.state !== 'Deleted') {
    const spec = parseSpec(run.spec);
    const overdue = now.getTime() > Date.parse(pod.deadline ?? '');
    if (ended || deleting || (spec.ok && spec.spec.cancel) || status.job?.finishedAt !== undefined || overdue) return URGENCY.billing;
  }
  const last = status.attempts?.at(-1)?.outcome;
  if (last === 'Pending' || last === 'Ambiguous') return URGENCY.billing;
  return ended && !deleting ? URGENCY.settled : URGENCY.working;
}
