// What each judge should say of a RunpodRun, from the run's own facts (the mapping
// docs/guide/09-gitops.md documents). The tests hold the Lua check, kstatus and the controller's conditions to it.
export interface Expected { lua: string; kstatus: string; kind: string }

interface Snapshot {
  metadata?: { generation?: number; deletionTimestamp?: string };
  status?: { observedGeneration?: number; phase?: string; reason?: string };
}

export function expectedHealth(run: Snapshot): Expected {
  const status = run.status;
  if (run.metadata?.deletionTimestamp) return { kind: 'deleting', lua: 'Progressing', kstatus: 'Terminating' };
  if (!status?.phase) return { kind: 'no phase yet', lua: 'Progressing', kstatus: 'InProgress' };
  if ((status.observedGeneration ?? 0) < (run.metadata?.generation ?? 0)) {
    return { kind: `${status.phase}, generation not yet observed`, lua: 'Progressing', kstatus: 'InProgress' };
  }
  switch (status.phase) {
    case 'Succeeded': return { kind: 'Succeeded', lua: 'Healthy', kstatus: 'Current' };
    case 'Failed':
      return status.reason === 'Cancelled'
        ? { kind: 'Failed/Cancelled', lua: 'Suspended', kstatus: 'Failed' }
        : { kind: `Failed/${status.reason ?? ''}`, lua: 'Degraded', kstatus: 'Failed' };
    default: return { kind: status.phase, lua: 'Progressing', kstatus: 'InProgress' };
  }
}
