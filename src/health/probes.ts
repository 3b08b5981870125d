// The health probes' verdicts. /healthz: the process answers and no reconcile has been stuck (no
// progress) past the bound, so a leader whose workers hang is restarted and its lease passes on.
// /readyz: the leader's caches have synced, or this replica is a standby that has read the lease
// (both are ready: a standby must be able to take over, and kube must not drain it).
import type { InFlightReconcile } from '../kube/controller.ts';
import type { Route } from '../http/endpoint.ts';

export interface HealthSources {
  /** Reconciles in flight on this replica (none on a standby). */
  inFlight(): InFlightReconcile[];
  stuckAfterMs: number;
  /** Leading: has the leader's reflector synced? Standby: has it read the lease? */
  ready(): { ok: boolean; role: 'leader' | 'standby' | 'starting'; detail?: string };
}

export interface Verdict { ok: boolean; text: string }

function liveness(sources: HealthSources): Verdict {
  const stuck = sources.inFlight().filter((r) => r.idleMs > sources.stuckAfterMs);
  if (stuck.length === 0) return { ok: true, text: 'ok' };
  const worst = stuck[0] as InFlightReconcile;
  return { ok: false, text: `${stuck.length} reconcile(s) stuck: ${worst.key} made no progress for ${Math.round(worst.idleMs / 1000)} s (bound ${Math.round(sources.stuckAfterMs / 1000)} s)` };
}

export function readiness(sources: HealthSources): Verdict {
  const state = sources.ready();
  return { ok: state.ok, text: state.ok ? `ok (${state.role})` : `not ready (${state.role}${state.detail ? `: ${state.detail}` : ''})` };
}

export function healthRoutes(sources: HealthSources): Record<string, Route> {
  const answer = (verdict: Verdict) => ({ status: verdict.ok ? 200 : 500, body: `${verdict.text}\n` });
  return {
    '/healthz': () => answer(liveness(sources)),
    '/readyz': () => answer(readiness(sources)),
  };
}
