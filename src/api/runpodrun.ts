// The RunpodRun resource as a whole: names, and the parse the controller applies to every object it reads.
import { runpodRunSpec, type RunpodRunSpec } from './spec.ts';
import { runpodRunStatus, type RunpodRunStatus } from './status.ts';

export const group = 'runpod-operator.dev';
export const version = 'v1alpha1';
export const apiVersion = `${group}/${version}`;
export const kind = 'RunpodRun';
export const plural = 'runpodruns';
export const finalizer = `${group}/cleanup`;
export const skipCleanupAnnotation = `${group}/skip-cleanup`;

export interface RunpodRun {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation?: number;
    resourceVersion?: string;
    creationTimestamp?: string | Date;
    deletionTimestamp?: string | Date;
    finalizers?: string[];
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  };
  spec: unknown;
  status?: RunpodRunStatus;
}

export type SpecVerdict = { ok: true; spec: RunpodRunSpec } | { ok: false; message: string };

/** Parses a spec as the API server would judge it; the message names every offending field. */
export function parseSpec(spec: unknown): SpecVerdict {
  const result = runpodRunSpec.safeParse(spec);
  if (result.success) return { ok: true, spec: result.data };
  const message = result.error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => `${fieldPath([...issue.path, key])}: unknown field`)
      : [`${fieldPath(issue.path)}: ${issue.message}`]).join('; ');
  return { ok: false, message };
}

/** `spec.job.files[0].path`, as the API server names a field. */
function fieldPath(path: PropertyKey[]): string {
  return path.reduce<string>((out, part) => (typeof part === 'number' ? `${out}[${part}]` : `${out}.${String(part)}`), 'spec');
}

export { runpodRunSpec, runpodRunStatus, type RunpodRunSpec, type RunpodRunStatus };
