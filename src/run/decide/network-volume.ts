// spec.networkVolume: its data center comes from the volume (read once per run, before the first
// create, into status.networkVolume), and every pod of the run is placed there. What cannot work is an
// InvalidSpec before any pod bills: a volume this account does not have, dataCenterIds that exclude
// its data center, or a data center that offers none of spec.gpu.types.
import type { RunpodRunSpec } from '../../api/spec.ts';
import type { RunpodRunStatus } from '../../api/status.ts';
import type { Observation } from './model.ts';
import type { VolumeOutcome } from './outcome.ts';
import { fail, step, type Context, type Step } from './step.ts';

/** The step that reads the volume, while the status does not know the spec's volume yet. */
export function readVolumeFirst(status: RunpodRunStatus, spec: RunpodRunSpec): Step | undefined {
  const volume = spec.networkVolume;
  if (!volume || status.networkVolume?.id === volume.id) return undefined;
  return step({ type: 'readNetworkVolume', volumeId: volume.id });
}

/** Where the run's pods may be placed: the volume's data center, else spec.dataCenterIds. */
export function placement(spec: RunpodRunSpec, status: RunpodRunStatus): string[] | undefined {
  const volume = status.networkVolume;
  return volume && volume.id === spec.networkVolume?.id ? [volume.dataCenterId] : spec.dataCenterIds;
}

export function applyVolumeOutcome(obs: Observation, status: RunpodRunStatus, outcome: VolumeOutcome): void {
  const ctx: Context = { obs, status, events: [] };
  const spec = obs.spec.ok ? obs.spec.spec : undefined;
  const id = spec?.networkVolume?.id;
  if (!spec || !id) return;
  if (outcome.kind === 'missing') {
    fail(ctx, 'InvalidSpec', `spec.networkVolume.id: this Runpod account has no network volume ${id}`);
    return;
  }
  const where = outcome.dataCenterId;
  if (spec.dataCenterIds && !spec.dataCenterIds.includes(where)) {
    fail(ctx, 'InvalidSpec', `spec.dataCenterIds (${spec.dataCenterIds.join(', ')}) does not include ${where}, the data center of spec.networkVolume ${id}: a pod mounts a volume only in its data center`);
    return;
  }
  const types = spec.gpu.types;
  if (types && outcome.gpuTypes && !types.some((type) => outcome.gpuTypes?.includes(type))) {
    fail(ctx, 'InvalidSpec', `${where}, the data center of spec.networkVolume ${id}, offers none of spec.gpu.types (${types.join(', ')})`);
    return;
  }
  status.networkVolume = { id, dataCenterId: where };
}
