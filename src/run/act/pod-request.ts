// The create call for one attempt: our markers, the bootstrap as args, the limits the on-pod
// watchdog enforces. Never the account key or a job secret (those go over SSH only).
import type { RunpodRun } from '../../api/runpodrun.ts';
import type { RunpodRunSpec } from '../../api/spec.ts';
import { renderPodArgs, renderPodEnv } from '../../pod/render.ts';
import { runDirOf, stateDirOf } from '../../pod/protocol.ts';
import type { CreatePodRequest } from '../../runpod/index.ts';
import type { SshSecret } from '../ports/run-api.ts';

export interface PodRequestInput {
  run: RunpodRun;
  spec: RunpodRunSpec;
  sshKeys: SshSecret;
  attemptName: string;
  attemptNumber: number;
  gpuType: string;
  clusterId: string;
  scope: string;
  runpodApiUrl: string;
  watchdogPeriodMs: number;
  now: Date;
  /** The Runpod registry credential of a private image (status.registry). */
  registryId?: string | undefined;
  /** The data centers the pod may be placed in (its network volume's, else spec.dataCenterIds). */
  placement?: string[] | undefined;
  /** limits.activeDeadlineSeconds' end (epoch ms), when set: no pod of the run outlives it. */
  runDeadlineMs?: number | undefined;
  /** What the run's earlier pods cost (status.estimatedCostUsd): this pod's watchdog gets the rest of the cap. */
  spentUsd?: string | undefined;
}

/** The part of maxCostUsd earlier pods of the run left; never below a cent (provision creates nothing once the cap is spent). */
function remainingCap(cap: string | undefined, spentUsd: string | undefined): string | undefined {
  if (cap === undefined) return undefined;
  return Math.max(0.01, Number(cap) - Number(spentUsd ?? 0)).toFixed(2);
}

export function buildCreatePodRequest(input: PodRequestInput): CreatePodRequest {
  const { spec } = input;
  // The pod is created a moment after this; a deadline counted from now errs on the early side.
  const deadline = Math.min(Math.floor(input.now.getTime() / 1000) + spec.limits.maxRuntimeSeconds, Math.floor((input.runDeadlineMs ?? Infinity) / 1000));
  return {
    name: input.attemptName,
    image: spec.image,
    gpu: { id: input.gpuType, count: spec.gpu.count },
    cloud: spec.cloud,
    ...(input.placement ? { dataCenterIds: input.placement } : {}),
    ...(input.registryId ? { registry: input.registryId } : {}),
    disk: spec.containerDiskGb,
    ports: ['22/tcp'],
    ...(spec.networkVolume ? { mounts: { network: [{ volumeId: spec.networkVolume.id, path: spec.networkVolume.mountPath }] } } : {}),
    args: renderPodArgs(),
    env: renderPodEnv({
      clusterId: input.clusterId,
      scope: input.scope,
      runUid: input.run.metadata.uid,
      attempt: input.attemptNumber,
      apiUrl: input.runpodApiUrl,
      deadline,
      maxCostUsd: remainingCap(spec.limits.maxCostUsd, input.spentUsd),
      bootGraceSeconds: spec.limits.bootGraceSeconds,
      retrieveGraceSeconds: spec.limits.retrieveGraceSeconds,
      keepPod: spec.keepPod,
      runDir: runDirOf(input.run.metadata.uid),
      stateDir: stateDirOf(input.run.metadata.uid),
      hostPrivateKey: input.sshKeys.hostPrivateKey,
      authorizedKey: input.sshKeys.clientPublicKey,
      watchdogPeriodSeconds: Math.round(input.watchdogPeriodMs / 1000),
    }),
  };
}
