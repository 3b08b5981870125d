// Stale views never act: a create is sent only on a view of the run the API server has
// just confirmed current. Every reconcile reads the run live (a GET, never the reflector's cache),
// and decide() records each attempt in the status before its create: that write is a merge patch
// carrying the resourceVersion of the view (kube/status.ts), so its success is the confirmation, and
// a write that landed in between (the controller's own earlier one arriving late, a replica that
// has not stopped yet) makes it a 409 instead of a second pod. When a step that sends a create
// changes no status, nothing was confirmed: the run is read again, and a different resourceVersion
// means decide must look again at what the API server has now.
import type { RunpodRun } from '../../api/runpodrun.ts';

export interface RunReader { get(namespace: string, name: string): Promise<RunpodRun | undefined> }

/**
 * True when `decidedOn` (the view the step was decided on) is still the run's current version.
 * `afterWrite` is the object the reconcile's own status write returned, or `decidedOn` itself when
 * it wrote nothing; only then is a live read needed (one GET, only before a create).
 */
export async function stillCurrent(runs: RunReader, decidedOn: RunpodRun, afterWrite: RunpodRun): Promise<boolean> {
  if (afterWrite !== decidedOn) return true;
  const { namespace, name, uid, resourceVersion } = decidedOn.metadata;
  const live = await runs.get(namespace, name);
  // resourceVersions are opaque: equal means the same version, anything else means look again.
  return live?.metadata.uid === uid && live.metadata.resourceVersion === resourceVersion;
}
