// Following a pod that exists: the deadline, readiness, the graces and the cost cap, then the job
// as one SSH exec per poll reads it (verdicts, keepPod, start, cancel, retrieval).
import { exponentialDelay } from '../../kube/backoff.ts';
import { setCondition, conditionIs } from './conditions.ts';
import type { RunpodRunStatus, Reason } from '../../api/status.ts';
import type { RunpodRunSpec } from '../../api/spec.ts';
import { whatIsKnown } from './pod-ended.ts';
import { fail, phase, step, wait, type Context, type LivePodContext, type PodContext, type Step } from './step.ts';
import { formatUsd, updateCost } from './cost.ts';
import { missingAtDeadline, podMissing, podStopped, watchdogCouldNotDelete } from './pod-gone.ts';
import { graceRenewal, retrieveGraceEnd } from './grace.ts';
import { VERDICT_BOUND_SECONDS } from '../../pod/protocol.ts';
import { verdictBoundMs } from './timings.ts';
import { currentTry, endTry, failOrRetry, retryAllowed } from './retry.ts';
import { lastWord, systemLogDue } from './system-log.ts';

export function followPod(ctx: PodContext, spec: RunpodRunSpec): Step {
  const { obs, status, pod, list } = ctx;
  const now = obs.now.getTime();
  const listed = list.items.find((p) => p.id === pod.id);
  const deadline = Date.parse(pod.deadline ?? '');

  if (now > deadline + obs.settings.deadlineMarginMs) {
    pod.state = 'Deleting';
    if (!listed && pod.missingSince) return missingAtDeadline(ctx, deadline, pod.missingSince);
    return fail(ctx, 'DeadlineExceeded', `the pod outlived spec.limits.maxRuntimeSeconds (${spec.limits.maxRuntimeSeconds}s); deleted by the controller`);
  }
  if (!listed) return podMissing(ctx, deadline);
  pod.state = listed.status;
  delete pod.missingSince;
  pod.listedAt ??= list.listedAt.toISOString();
  // The create answer may lack the price (or say 0): the lists' word keeps the cost and the cap honest.
  if (listed.costPerHour !== undefined && listed.costPerHour > 0 && pod.costPerHour !== formatUsd(listed.costPerHour)) {
    pod.costPerHour = formatUsd(listed.costPerHour);
    updateCost(ctx);
  }
  if (listed.status === 'EXITED' || listed.status === 'ERROR') return podStopped(ctx, listed.status, deadline);

  if (!conditionIs(status, 'PodReady')) {
    const age = now - Date.parse(pod.createdAt ?? obs.now.toISOString());
    if (age > spec.limits.readyTimeoutSeconds * 1000) {
      pod.state = 'Deleting';
      const attempt = status.attempts?.find((a) => a.podId === pod.id);
      if (attempt) {
        attempt.outcome = 'NotReady';
        attempt.message = `SSH did not answer with the pinned host key within ${spec.limits.readyTimeoutSeconds}s${lastWord(pod)}`;
      }
      phase(ctx, 'Provisioning', 'Provisioning', `pod ${pod.name} was not ready in time; deleting it before trying the next GPU type`);
      return step({ type: 'none' });
    }
    if (!listed.ssh) {
      phase(ctx, 'Provisioning', 'WaitingForSsh', `pod ${pod.name} is ${listed.status}; waiting for its SSH port${lastWord(pod)}`);
      return systemLogDue(ctx) ?? wait(Math.min(obs.settings.pollIntervalMs, 5000));
    }
    pod.sshHost = listed.ssh.host;
    pod.sshPort = listed.ssh.port;
    phase(ctx, 'Provisioning', 'WaitingForSsh', `pod ${pod.name}: waiting for SSH with the pinned host key`);
    return step({ type: 'probeSsh', podId: pod.id, host: listed.ssh.host, port: listed.ssh.port }, 3000);
  }

  // Ports change when a pod resets: keep the endpoint current.
  if (listed.ssh) {
    pod.sshHost = listed.ssh.host;
    pod.sshPort = listed.ssh.port;
  }
  const graceOver = gracePassed(ctx, spec);
  if (graceOver) {
    pod.state = 'Deleting';
    return endTry(ctx, ...graceOver);
  }
  const cap = spec.limits.maxCostUsd;
  if (cap !== undefined && status.estimatedCostUsd !== undefined && Number(status.estimatedCostUsd) >= Number(cap)) {
    pod.state = 'Deleting';
    return fail(ctx, 'CostCapReached', `the estimated spend ${status.estimatedCostUsd} USD reached spec.limits.maxCostUsd (${cap}); deleted by the controller`);
  }
  return followJob(ctx, spec);
}

/** When PodReady became True (the bounds below count from it). */
function readySince(status: RunpodRunStatus): number {
  const ready = status.conditions?.find((c) => c.type === 'PodReady' && c.status === 'True');
  return Date.parse(ready?.lastTransitionTime ?? '');
}

/**
 * A pod time (moved onto the controller's clock by the offset this read measured) bounded by what the
 * controller knows: not before `notBeforeMs`, not after the read. A pod's clock that stepped between the
 * time's writing and the read moves it by the step (seen: 2 h ahead just after a job's end put that end
 * 2 h in the past, and the retrieve grace over at once).
 */
function podTime(seconds: number, notBeforeMs: number, now: Date): string {
  const floor = Number.isFinite(notBeforeMs) ? notBeforeMs : Number.NEGATIVE_INFINITY;
  return new Date(Math.min(now.getTime(), Math.max(floor, seconds * 1000))).toISOString();
}

/**
 * The watchdog's graces, enforced by the controller too (+ its margin), whether or not SSH answers: a
 * pod whose watchdog is broken must not bill until the deadline. The boot grace counts from readiness
 * (the watchdog starts just before), the retrieve grace from the job's recorded end; a kept pod is
 * exempt from the retrieve grace (its deadline bounds it), as on the pod.
 */
function gracePassed(ctx: Context, spec: RunpodRunSpec): [Reason, string] | undefined {
  const { obs, status } = ctx;
  const now = obs.now.getTime();
  const margin = obs.settings.deadlineMarginMs;
  const name = status.pod?.name ?? '';
  if (!status.job?.startedAt && now > readySince(status) + spec.limits.bootGraceSeconds * 1000 + margin) {
    return ['BootTimeout', `no job started on pod ${name} within spec.limits.bootGraceSeconds (${spec.limits.bootGraceSeconds}s) of its readiness; deleted by the controller`];
  }
  // As renewed while a transfer waited or moved (status.pod.retrieveGraceUntil), which survives a restart.
  if (!spec.keepPod && !status.results?.retrievedAt && now > retrieveGraceEnd(status, spec) + margin) {
    return ['ResultsUnverified', `the results of pod ${name} were not verified within spec.limits.retrieveGraceSeconds (${spec.limits.retrieveGraceSeconds}s) of the job's end; deleted by the controller`];
  }
  return undefined;
}

/**
 * What SSH alone still does while Runpod cannot be asked (the key is gone, malformed, or refused and
 * not confirmed yet): a ready pod whose job started keeps being followed (its exit recorded, its results
 * retrieved, keepPod set), as the pod's deadline does not wait for the key. Nothing is started and
 * nothing needs Runpod. Undefined: nothing SSH can do (not ready, not read, or no job started).
 */
export function followJobOverSsh(ctx: LivePodContext, spec: RunpodRunSpec): Step | undefined {
  const state = ctx.obs.podState;
  if (!conditionIs(ctx.status, 'PodReady') || !state || (state.job.status === 'none' && !ctx.status.job?.startedAt)) return undefined;
  const graceOver = gracePassed(ctx, spec);
  if (graceOver) {
    ctx.pod.state = 'Deleting';
    return endTry(ctx, ...graceOver);
  }
  return followJob(ctx, spec);
}

/** A ready pod: verdicts, keepPod, start, follow, cancel and retrieve, read from one SSH exec per poll. */
function followJob(ctx: LivePodContext, spec: RunpodRunSpec): Step {
  const { obs, status, pod } = ctx;
  const state = obs.podState;
  if (!state) return wait(Math.min(obs.settings.pollIntervalMs, 5000));
  if (state.deleteFailed) return watchdogCouldNotDelete(ctx, state.deleteFailed);
  const bootFailure = state.runDirMissing ? 'the bootstrap never created the state directory'
    : state.bootstrap.status === 'failed' ? `the bootstrap failed: ${state.bootstrap.reason}`
      : state.watchdog.status === 'failed' ? `its watchdog cannot delete it (${state.watchdog.reason}); the job is not started` : undefined;
  if (bootFailure) {
    pod.state = 'Deleting';
    return endTry(ctx, 'BootFailed', `pod ${pod.name}: ${bootFailure}`);
  }
  if (state.job.status === 'none' && (state.bootstrap.status === 'pending' || state.watchdog.status === 'pending')) {
    if (obs.now.getTime() > readySince(status) + verdictBoundMs + obs.settings.deadlineMarginMs) {
      pod.state = 'Deleting';
      const missing = state.bootstrap.status === 'pending' ? 'the bootstrap' : 'its watchdog';
      return endTry(ctx, 'BootFailed', `pod ${pod.name}: no verdict from ${missing} within ${verdictBoundMs / 1000}s of readiness (+ --deadline-margin); the job is not started and the pod is deleted`);
    }
    const what = state.bootstrap.status === 'pending' ? 'its bootstrap to finish' : 'its watchdog to prove that its key can read (and so delete) the pod';
    phase(ctx, 'Running', 'PodReady', `pod ${pod.name} is ready; waiting for ${what} (up to ${VERDICT_BOUND_SECONDS}s: Runpod's answers may lag or be refused for a while)`);
    return wait(1000);
  }
  if (state.keep !== spec.keepPod) return step({ type: 'setKeep', keep: spec.keepPod });

  const job = (status.job ??= {});
  // The controller starts the job once the pod is ready: it cannot have started before.
  if (state.job.startedAt !== null) job.startedAt ??= podTime(state.job.startedAt, readySince(status), obs.now);
  if (job.startedAt) setCondition(status, 'JobStarted', 'True', 'JobStarted', `the job started on pod ${pod.name}`, obs.run.generation, obs.now);

  switch (state.job.status) {
    case 'none':
      if (job.startedAt) {
        // The pod's state went with its disk and its run directory with it: starting again would run the job twice.
        pod.state = 'Deleting';
        return endTry(ctx, 'PodLost', `pod ${pod.name} no longer knows the job that started at ${job.startedAt} (its state and run directory are gone); ${whatIsKnown(status)}; the pod is deleted`);
      }
      if (spec.cancel) { pod.state = 'Deleting'; return step({ type: 'none' }); }
      if (spec.limits.maxCostUsd !== undefined && !(Number(pod.costPerHour ?? 0) > 0)) {
        // A cap nobody can enforce is no cap: the job waits for a price, the boot grace bounds the wait.
        phase(ctx, 'Running', 'PodReady', `pod ${pod.name} is ready, but Runpod has not reported its price: spec.limits.maxCostUsd (${spec.limits.maxCostUsd}) cannot be enforced, so the job is not started; the pod is deleted after spec.limits.bootGraceSeconds unless a price appears`);
        return wait(obs.settings.pollIntervalMs);
      }
      phase(ctx, 'Running', 'PodReady', `pod ${pod.name} is ready; starting the job`);
      return step({ type: 'startJob', try: currentTry(status) });
    case 'starting':
    case 'running':
      if (spec.cancel) return step({ type: 'cancelJob' }, 2000);
      phase(ctx, 'Running', 'JobRunning', `the job is running on pod ${pod.name} (${pod.gpuType})`);
      return wait(obs.settings.pollIntervalMs);
    case 'lost':
      // A restart after the job's end was recorded loses nothing the run needs: the exit code is in the
      // status and the results are on the pod's volume (the bootstrap finds its claim there; a wiped
      // volume reads as a job never started). Only the log went with the container disk.
      if (job.finishedAt && job.exitCode !== undefined) {
        return retrieve(ctx, `pod ${pod.name} restarted its container after the job exited with code ${job.exitCode}; retrieving and verifying its results from the pod's volume`);
      }
      pod.state = 'Deleting';
      return endTry(ctx, 'PodLost', `pod ${pod.name} restarted its container: the job's exit code is lost; ${whatIsKnown(status)}; the pod is deleted`);
    case 'exited': {
      job.exitCode = state.job.exitCode ?? undefined;
      if (obs.status.job?.exitCode === undefined && job.exitCode !== 0) {
        // The log is on the pod, which goes once the results are in: its end goes into an event now.
        const tail = state.logTail.trimEnd().split('\n').slice(-10).join('\n');
        ctx.events.push({ type: 'Warning', reason: 'JobFailed', note: `the job exited with code ${job.exitCode ?? 'unknown'}; last lines of its log:\n${tail}` });
      }
      if (state.job.endedAt !== null) job.finishedAt ??= podTime(state.job.endedAt, Date.parse(job.startedAt ?? ''), obs.now);
      // A code spec.retry names is retried without retrieving: the next try's results replace these.
      const failure = { by: 'job', exitCode: job.exitCode } as const;
      if (job.exitCode !== 0 && retryAllowed(ctx, failure)) return failOrRetry(ctx, failure, 'JobFailed', `the job on pod ${pod.name} exited with code ${job.exitCode ?? 'unknown'} (spec.retry.onExitCodes); its results are not retrieved`);
      return retrieve(ctx, `the job exited with code ${job.exitCode ?? 'unknown'}; retrieving and verifying its results`);
    }
  }
}

/** The job has ended and its exit is recorded: retrieve (again, after a failed try, with backoff). */
function retrieve(ctx: Context, retrieving: string): Step {
  const { obs, status } = ctx;
  // A transfer in the pool: looked at again after a poll (the pool asks for a reconcile when it ends).
  const transferring = obs.transfer;
  const slot = transferring?.state === 'queued' ? `; waiting for a transfer slot (${transferring.ahead} ahead, --max-concurrent-transfers)` : '';
  const spec = obs.spec.ok ? obs.spec.spec : undefined;
  const renewal = spec && graceRenewal(ctx, spec);
  const until = status.pod?.retrieveGraceUntil;
  const extended = transferring && until && Date.parse(until) > obs.now.getTime() ? `; the pod's retrieve grace is extended to ${until} while it waits` : '';
  // While in the pool the retrieval step only looks at the transfer: the renewal takes its place.
  const action = renewal ? { type: 'renewRetrieveGrace' as const, seconds: renewal } : { type: 'retrieveResults' as const };
  if (obs.retrievalFailures > 0) {
    // The last attempt's findings stay the message: what was missing, different or refused is what the user acts on.
    const found = status.reason === 'ResultsUnverified' ? status.message : undefined;
    phase(ctx, 'Retrieving', 'ResultsUnverified', found ?? `the results could not be verified yet (try ${obs.retrievalFailures}); the pod stays for spec.limits.retrieveGraceSeconds`);
    const delayMs = exponentialDelay(2000, 60_000, obs.retrievalFailures);
    // Each failed try writes the status, whose watch event reconciles at once: the next try still waits
    // out its delay from the last failure, whatever woke this reconcile.
    const waitMs = !transferring && obs.lastRetrievalFailureAt ? obs.lastRetrievalFailureAt.getTime() + delayMs - obs.now.getTime() : 0;
    if (waitMs > 0) return wait(waitMs);
    return step(action, transferring ? obs.settings.pollIntervalMs : delayMs);
  }
  phase(ctx, 'Retrieving', 'Retrieving', `${retrieving}${slot}${extended}`);
  return step(action, transferring ? obs.settings.pollIntervalMs : 0);
}
