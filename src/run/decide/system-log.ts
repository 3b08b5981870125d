// A pod that does not come up usually explains itself in Runpod's system lines (API-NOTES 2026-12
// addendum, part 2: image pull, container create, start, exit). While a pod has no SSH port the
// controller reads them now and then, one request each (timings: 20 s after the create, then every minute), and
// keeps the telling line on status.pod. A pull the registry refused ends the run ImagePullFailed at
// once, its pod deleted: every GPU type would pull the same image, and waiting out readyTimeoutSeconds
// would only bill.
import type { RunpodRunStatus } from '../../api/status.ts';
import type { Observation } from './model.ts';
import type { SystemLogOutcome } from './outcome.ts';
import { fail, step, type Context, type PodContext, type Step } from './step.ts';

/** Docker's and registries' words for a refused pull (auth, a missing repository or tag). */
const pullRefused = /unauthorized|pull access denied|no basic auth credentials|authentication required|manifest unknown|repository does not exist/i;

/** The read of the pod's system lines, when one is due. */
export function systemLogDue({ obs, pod }: PodContext): Step | undefined {
  const now = obs.now.getTime();
  const { systemLogFirstReadMs, systemLogReadEveryMs } = obs.settings.timings;
  if (!(now - Date.parse(pod.createdAt ?? '') >= systemLogFirstReadMs)) return undefined;
  if (now - Date.parse(pod.systemLogReadAt ?? '') < systemLogReadEveryMs) return undefined;
  return step({ type: 'readSystemLog', podId: pod.id });
}

/** What Runpod last said of the pod, for a message ('' when nothing was read). */
export const lastWord = (pod: RunpodRunStatus['pod']): string => (pod?.systemLog ? `; Runpod's last word on it: "${pod.systemLog}"` : '');

export function applySystemLogOutcome(obs: Observation, status: RunpodRunStatus, outcome: SystemLogOutcome): void {
  const pod = status.pod;
  if (!pod || pod.id !== outcome.podId) return;
  pod.systemLogReadAt = obs.now.toISOString();
  const refused = outcome.lines.findLast((line) => pullRefused.test(line));
  const telling = refused ?? outcome.lines.at(-1);
  if (telling) pod.systemLog = telling.slice(0, 512);
  if (!refused) return;
  const attempt = status.attempts?.find((a) => a.podId === pod.id);
  const image = obs.spec.ok ? obs.spec.spec.image : 'the image';
  const message = `Runpod could not pull ${image} on pod ${pod.name}: "${pod.systemLog ?? ''}"; the pod is deleted`;
  if (attempt) {
    attempt.outcome = 'NotReady';
    attempt.message = message;
  }
  fail({ obs, status, events: [] } satisfies Context, 'ImagePullFailed', message);
}
