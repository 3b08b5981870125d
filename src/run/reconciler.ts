// One idempotent reconcile of a RunpodRun: observe (API server, the account's shared pod list,
// evidence of deletions) → decide (pure) → write the decided status first → act (one step) → write
// what the step learned. Safe to run any number of times, after any crash.
import { isDeepStrictEqual } from 'node:util';
import { finalizer, parseSpec, skipCleanupAnnotation, type RunpodRun } from '../api/runpodrun.ts';
import type { RunpodRunStatus } from '../api/status.ts';
import { registerSecret, releaseSecrets } from '../log.ts';
import { withSecretOwner } from '../redaction.ts';
import { isRunpodError } from '../runpod/index.ts';
import { s3SettingsFor, s3Uri } from '../results/s3-settings.ts';
import { discardStagingOf, resultLocation } from '../results/store.ts';
import { conditionIs, isTerminal } from './decide/conditions.ts';
import type { JobInputsVerdict } from './observe/job-inputs.ts';
import { NamespaceReads, sshSecretRead } from './observe/namespace-reads.ts';
import { registryNamePrefix } from './observe/registry-auth.ts';
import { sshJobHost } from './ports/job-host.ts';
import { runDirOf, stateDirOf } from '../pod/index.ts';
import { splitKey } from '../kube/keys.ts';
import type { ReconcileResult } from '../kube/controller.ts';
import { act, podView, protectSshKeys, type ActContext, type Written } from './act/act.ts';
import { activeDeadlineMs, decide, learn, pendingDeletions, placement, transitionEvent } from './decide/decide.ts';
import { CallReads } from './observe/call-reads.ts';
import { stillCurrent } from './observe/fresh-view.ts';
import { connectIfReady, type PodConnection } from './observe/pod-connection.ts';
import { storedResultsOf } from './observe/stored-results.ts';
import { listForbidden } from './observe/runpod-key.ts';
import type { Action, Observation } from './decide/model.ts';
import type { Outcome } from './decide/outcome.ts';
import { runpodPodBackend } from './ports/pod-backend.ts';
import { buildCreatePodRequest } from './act/pod-request.ts';
import { rememberRetrieval, settledRetrieval } from './act/retrieve.ts';
import type { RetrievalPool } from './act/context.ts';
import { RunApi } from './ports/run-api.ts';
import { RunEvidence } from './memory/evidence.ts';
import { spendPriceKey } from './memory/spend-room.ts';
import type { ReconcileCall, RunReconcilerOptions } from './reconciler-options.ts';

export type { EventSink, ReconcileCall, RunReconcilerOptions } from './reconciler-options.ts';

/**
 * Steps that only prepare the next one, none of them a Runpod write: a new run's finalizer, SSH keys
 * and catalog before its create, and keepPod set on a ready pod before its job starts. See reconcile().
 */
const preparingSteps: ReadonlySet<Action['type']> = new Set(['addFinalizer', 'ensureSshKeys', 'readCatalog', 'setKeep']);

/** One pass: its result and step, the newest run the API server answered with, what its step wrote. */
interface PassResult { result: ReconcileResult; action: Action['type']; newest: RunpodRun; written: Written }

export class RunReconciler {
  readonly runs: RunApi;
  #options: RunReconcilerOptions;
  #evidence = new RunEvidence();
  readonly #namespaceReads: NamespaceReads;

  constructor(options: RunReconcilerOptions) {
    this.#options = options;
    this.runs = new RunApi(options.kubeConfig);
    this.#namespaceReads = new NamespaceReads(this.runs, registryNamePrefix(options.clusterId, options.scope));
  }

  async reconcile(key: string, call: ReconcileCall = {}): Promise<ReconcileResult> {
    const [namespace, name] = splitKey(key);
    // A preparing step goes on in this worker to the step it prepares (each pass from a fresh read, as
    // a requeue would), instead of waiting its turn behind every other run: with many runs applied at
    // once, the first creates are sent at once rather than after every run's finalizer and keys, and a
    // ready pod's job starts in the reconcile that set its keepPod (measured with 300 runs: a turn of
    // the queue between the two was up to 70 s).
    const reads = new CallReads();
    let run = await this.runs.get(namespace, name);
    for (let pass = 0; run; pass++) {
      const view = run;
      // What this reconcile registers for redaction is the run's: released when the run ends.
      const { result, action, newest, written } = await withSecretOwner(view.metadata.uid, () => this.#reconcile(view, call, reads));
      if (call.oneStep || !preparingSteps.has(action) || result.requeueAfterMs !== 0 || pass >= preparingSteps.size) return result;
      // The SSH keys the step just wrote are what a read of their Secret would answer.
      if (written.sshKeys) reads.answer(sshSecretRead, { keys: written.sshKeys });
      // The next pass decides on the newest answer the API server gave about the run (its status or
      // finalizer write, or this pass's view when it wrote none): a create is still sent only on a view
      // the API server has just confirmed current (fresh-view.ts).
      run = newest;
    }
    return {};
  }

  async #reconcile(run: RunpodRun, call: ReconcileCall, reads: CallReads): Promise<PassResult> {
    const { signal } = call;
    signal?.throwIfAborted();
    const { obs, context, pod } = await this.#observe(run, call, reads);
    // Closing the connection ends whatever runs over it (an exec, a transfer) at once.
    const closeOnAbort = (): void => context.ssh?.close();
    signal?.addEventListener('abort', closeOnAbort, { once: true });
    let done = false;
    try {
      const result = await this.#decideAndAct(run, obs, context, call);
      done = true;
      return result;
    } finally {
      signal?.removeEventListener('abort', closeOnAbort);
      // Kept for the next reconcile only when everything over it went well; else the next one connects afresh.
      if (pod && done && context.jobHost.sound && call.connections) call.connections.giveBack(run.metadata.uid, pod.target, pod.connection);
      else pod?.connection.close();
    }
  }

  async #decideAndAct(run: RunpodRun, obs: Observation, context: Omit<ActContext, 'run'>, call: ReconcileCall): Promise<PassResult> {
    const { signal } = call;
    const decision = decide(obs);
    let current = run;
    const attempt = run.status?.attempts?.at(-1)?.name;
    (call.log ?? this.#options.logger).debug({
      run: run.metadata.name, namespace: run.metadata.namespace, pod: run.status?.pod?.id, attempt, action: decision.action.type,
      phase: decision.status.phase, reason: decision.status.reason,
    }, 'reconcile step');
    signal?.throwIfAborted();
    if (!isDeepStrictEqual(decision.status, run.status ?? {})) current = await this.runs.writeStatus(run, decision.status);
    // Written: the pool's outcome is the status's now (a failed write leaves it for the next reconcile).
    if (decision.appliedRetrieval) {
      rememberRetrieval({ evidence: this.#evidence, metrics: this.#options.metrics }, run.metadata.uid, decision.appliedRetrieval, obs.now);
      // Said where an operator looks: the status keeps only the latest reason, a later one may hide it.
      if (decision.appliedRetrieval.kind === 'unverified') (call.log ?? this.#options.logger).info({ run: run.metadata.name, namespace: run.metadata.namespace, pod: run.status?.pod?.id, why: decision.appliedRetrieval.message }, 'a retrieval try was not verified');
      call.transfers?.take(run.metadata.uid);
    }
    for (const event of decision.events) this.#options.events.record(current, event);

    signal?.throwIfAborted();
    const written: Written = {};
    if (decision.action.type === 'createPod' && !(await stillCurrent(this.runs, run, current))) {
      (call.log ?? this.#options.logger).info({ run: run.metadata.name, namespace: run.metadata.namespace, attempt }, 'the run changed since this reconcile read it; deciding again before any create');
      return { result: { requeueAfterMs: 0 }, action: decision.action.type, newest: current, written };
    }
    let outcome: Outcome | undefined;
    try {
      outcome = await act(decision.action, { ...context, run: current, written });
    } catch (error) {
      // The account's budget is spent for a while (a 429 storm): the run comes back when it frees,
      // rather than holding a worker that another account's runs need.
      if (!isRunpodError(error, 'rate-limited') || signal?.aborted) throw error;
      const afterMs = Math.max(1000, error.retryAfterMs ?? this.#options.settings.timings.workerRateLimitWaitMs);
      (call.log ?? this.#options.logger).info({ run: run.metadata.name, namespace: run.metadata.namespace, action: decision.action.type, afterMs }, 'the account\'s Runpod budget is spent for now; the step is taken again when it frees');
      return { result: { requeueAfterMs: afterMs }, action: decision.action.type, newest: current, written };
    }
    if (written.run) current = written.run;
    // A replica told to stop writes nothing more: the intent is in the status, the next leader observes again.
    signal?.throwIfAborted();
    const learned = outcome && learn(obs, current.status ?? {}, outcome);
    if (learned && !isDeepStrictEqual(learned, current.status ?? {})) {
      const transition = transitionEvent(current.status ?? {}, learned);
      const { namespace, name } = current.metadata;
      current = await this.runs.recordStatusChange(current, current.status ?? {}, learned, () =>
        this.#options.logger.info({ namespace, name, action: decision.action.type }, 'status write met a conflict; re-read and re-applied what the step learned'));
      if (transition) this.#options.events.record(current, transition);
    }
    if (decision.action.type === 'removeFinalizer') this.#forget(run, call.transfers);
    // What a cut-short retrieval staged waits to be resumed only while the run may still retrieve.
    const settled = decision.action.type === 'removeFinalizer' || (!isTerminal(run.status?.phase) && isTerminal(current.status?.phase));
    if (settled && !context.s3) await discardStagingOf(context.resultLocation);
    return { result: this.#requeue(decision.requeue), action: decision.action.type, newest: current, written };
  }

  async #observe(run: RunpodRun, call: ReconcileCall, reads: CallReads): Promise<{ obs: Observation; context: Omit<ActContext, 'run'>; pod: PodConnection | undefined }> {
    const { uid, namespace } = run.metadata;
    const parsed = parseSpec(run.spec);
    const s3 = parsed.ok ? s3SettingsFor(parsed.spec.results.s3, this.#options.s3Defaults, { namespace, name: run.metadata.name, uid }, this.#options.s3AllowedBuckets) : undefined;
    // A store the controller may not write to with its own identity is the spec's problem, said before
    // anything is rented; a run that already rented (the flag changed since) keeps going, its retrieval refused.
    const verdict = s3?.refused && !run.status?.attempts?.length ? { ok: false as const, message: s3.refused } : parsed;
    const spec = verdict.ok ? verdict.spec : undefined;
    // A finished run uses no SSH key, job secret or S3 key again (its account's key is the client's, held
    // by the process): what it registered goes, and nothing is registered again at each resync.
    const finished = isTerminal(run.status?.phase);
    // The job's inputs matter until the job has started: before renting, and for the start itself.
    const inputsMatter = spec && !finished && !run.status?.job?.startedAt;
    const { keyRead, sshKeys, sshSecretConflict, jobInputs: read } = await this.#namespaceReads.read(run, spec, finished, reads);
    const secretKey = keyRead?.ok ? keyRead.apiKey : undefined;
    if (finished) this.#releaseSecrets(uid);
    else registerSecret(secretKey);
    if (secretKey) this.#options.accounts.rememberRunKey(uid, secretKey);
    // A deleted run whose Secret went first still cleans up with the key it last used.
    const apiKey = secretKey ?? (run.metadata.deletionTimestamp ? this.#options.accounts.runKey(uid) : undefined);
    const account = apiKey ? this.#options.accounts.get(apiKey) : undefined;
    const snapshot = account?.observer.snapshot;
    if (snapshot) this.#evidence.noteList(new Set((snapshot.byRun.get(uid) ?? []).map((pod) => pod.id)), snapshot.listedAt, pendingDeletions(run.status ?? {}), this.#options.settings.timings.lookSpacingMs / 2);
    if (sshKeys && !finished) protectSshKeys(sshKeys);
    const status: RunpodRunStatus = structuredClone(run.status ?? {});
    const jobInputs: JobInputsVerdict = inputsMatter && read ? read : { ok: true, inputs: { env: {}, files: [] } };
    const listed = snapshot && (snapshot.byRun.get(uid) ?? []).map(podView);
    // A pod that restarted its container has new port mappings: the list knows them before the status
    // does, so a usable account's first list is waited for (decide waits for it too); while Runpod
    // refuses the key, or there is none, the status's endpoint is all there is.
    const endpoint = listed?.find((pod) => pod.id === status.pod?.id)?.ssh;
    const firstListDue = account !== undefined && !snapshot && !account.observer.refused;
    const ready = conditionIs(status, 'PodReady') && !isTerminal(status.phase);
    const pod = firstListDue ? undefined : await connectIfReady(run, status, sshKeys, endpoint, {
      ready, signal: call.signal, metrics: this.#options.metrics, connections: call.connections, onUnreachable: (error) => this.#unreadable(run, error),
    });
    const ssh = pod?.connection;
    const jobHost = sshJobHost(ssh, { runDir: runDirOf(uid), stateDir: stateDirOf(uid) }, () => this.#now().getTime());
    const podState = ssh ? await jobHost.readState(call.signal).catch((error: unknown) => this.#unreadable(run, error)) : undefined;
    const now = this.#now();
    const location = s3 ? s3Uri(s3) : resultLocation(this.#options.resultsDir, namespace, run.metadata.name, uid);
    const transfer = call.transfers?.look(uid);
    // A pooled transfer's outcome is decide's to apply (obs.retrieval). Otherwise, what a crashed status
    // write left: the disk store's committed directory, or the run's SHA256SUMS in its bucket.
    const adoptable = !transfer && status.job?.finishedAt && !status.results?.retrievedAt && !isTerminal(status.phase);
    const storedResults = adoptable ? await storedResultsOf(this.runs, run, s3, location, this.#options.logger) : undefined;
    // The spend-limit figures for the pod the run would create (its last attempt's type), as the account's refusals taught them.
    const waitingOn = status.attempts?.at(-1)?.gpuType;
    const accountSpend = account && spec && waitingOn ? account.spendRoom.known(spendPriceKey(waitingOn, spec), now) : undefined;
    const obs: Observation = {
      now,
      run: {
        name: run.metadata.name, namespace, uid, generation: run.metadata.generation ?? 1,
        deleting: run.metadata.deletionTimestamp !== undefined,
        hasFinalizer: run.metadata.finalizers?.includes(finalizer) ?? false,
        skipCleanup: run.metadata.annotations?.[skipCleanupAnnotation] === 'true',
      },
      spec: verdict,
      status,
      credentials: apiKey || !keyRead || keyRead.ok
        ? { found: true, rejected: account?.observer.rejected, insufficient: listForbidden(account?.observer.forbidden, namespace, spec), refused: account?.observer.refused }
        : { found: false, invalid: keyRead.invalid, message: keyRead.message },
      sshKeysReady: sshKeys !== undefined,
      ...(sshSecretConflict ? { sshSecretConflict } : {}),
      pods: snapshot && listed && { listedAt: snapshot.listedAt, items: listed },
      catalog: this.#evidence.catalog(uid),
      deletions: this.#evidence.deletions(),
      jobInputs: jobInputs.ok ? { ok: true, registry: jobInputs.inputs.registry?.name } : jobInputs,
      podState,
      retrievalFailures: this.#evidence.retrievalFailures(uid),
      ...(this.#evidence.lastRetrievalFailureAt(uid) ? { lastRetrievalFailureAt: this.#evidence.lastRetrievalFailureAt(uid) } : {}),
      ...(storedResults ? { storedResults } : {}),
      ...(transfer?.state === 'settled' ? { retrieval: settledRetrieval(transfer.outcome) }
        : transfer ? { transfer: transfer.state === 'queued' ? { state: 'queued', ahead: transfer.ahead } : { state: 'running' } } : {}),
      spend: accountSpend || snapshot ? { ...accountSpend, runningUsdPerHour: snapshot?.runningUsdPerHour } : undefined,
      settings: this.#options.settings,
    };
    const context: Omit<ActContext, 'run'> = {
      obs, spec, pods: account && runpodPodBackend(account.client, { maxRateLimitWaitMs: this.#options.settings.timings.workerRateLimitWaitMs }), sshKeys, runs: this.runs, ssh, jobHost,
      now: () => this.#now(),
      jobInputs: jobInputs.ok ? jobInputs.inputs : undefined,
      resultLocation: location, s3,
      evidence: this.#evidence,
      refreshPods: () => account?.observer.refreshSoon(),
      signal: call.signal, progress: call.progress, metrics: this.#options.metrics, transfers: call.transfers, spendRoom: account?.spendRoom,
      placement: spec && placement(spec, status),
      buildCreateRequest: (attemptName, attemptNumber, gpuType) => {
        if (!spec || !sshKeys) throw new Error('cannot create a pod without a valid spec and SSH keys');
        return buildCreatePodRequest({
          run, spec, sshKeys, attemptName, attemptNumber, gpuType, now, spentUsd: status.estimatedCostUsd, runDeadlineMs: activeDeadlineMs(spec, status, now), placement: placement(spec, status), registryId: status.registry?.id,
          clusterId: this.#options.clusterId, scope: this.#options.scope, runpodApiUrl: this.#options.runpodApiUrl, watchdogPeriodMs: this.#options.watchdogPeriodMs,
        });
      },
    };
    return { obs, context, pod };
  }

  /** The one source of wall-clock time for observations and for what act records. */
  #now(): Date {
    return this.#options.now?.() ?? new Date();
  }

  #unreadable(run: RunpodRun, error: unknown): undefined {
    this.#options.logger.info({
      run: run.metadata.name, namespace: run.metadata.namespace, pod: run.status?.pod?.id, attempt: run.status?.attempts?.at(-1)?.name, err: error,
    }, 'the pod did not answer over SSH this time');
    return undefined;
  }

  #requeue(requeue: ReturnType<typeof decide>['requeue']): ReconcileResult {
    if (requeue === 'backoff') return { requeueRateLimited: { atMostMs: this.#options.settings.timings.unwatchedRecheckMaxMs } };
    return requeue === 'none' ? {} : { requeueAfterMs: requeue.afterMs };
  }

  #releaseSecrets(uid: string): void {
    releaseSecrets(uid);
    this.#namespaceReads.forget(uid);
  }

  #forget(run: RunpodRun, transfers: RetrievalPool | undefined): void {
    transfers?.abort(run.metadata.uid, 'the run is gone');
    this.#releaseSecrets(run.metadata.uid);
    this.#options.accounts.forgetRun(run.metadata.uid);
    const podIds = [run.status?.pod?.id, ...(run.status?.strayPods ?? [])].filter((podId): podId is string => Boolean(podId));
    this.#evidence.forgetRun(run.metadata.uid, podIds);
  }
}
