// What the job takes from the run's namespace: env values and files from Secrets and ConfigMaps, and
// the credentials its private image is pulled with (registry-auth.ts).
// Read before any pod is rented (nothing is rented until all of it exists) and again at the start.
// Secret values join the redaction set: a job secret never reaches a log line or an event.
import type { RunpodRunSpec } from '../../api/spec.ts';
import { registerSecret } from '../../log.ts';
import type { RunApi } from '../ports/run-api.ts';
import { resolveRegistryAuth, type RegistryAuth } from './registry-auth.ts';

export interface JobInputs { env: Record<string, string>; files: { path: string; content: string; secret: boolean }[]; registry?: RegistryAuth | undefined }

/** invalid: what is there can never work (the spec's fault), rather than something still missing. */
export type JobInputsVerdict = { ok: true; inputs: JobInputs } | { ok: false; message: string; invalid?: boolean };

/** `registryPrefix`: this install's prefix of Runpod registry credential names. */
export async function resolveJobInputs(runs: RunApi, namespace: string, spec: Pick<RunpodRunSpec, 'job' | 'image' | 'imagePullSecret'>, registryPrefix: string): Promise<JobInputsVerdict> {
  const { job } = spec;
  const pull = await resolveRegistryAuth(runs, namespace, spec.image, spec.imagePullSecret?.name, registryPrefix);
  if (pull.kind === 'invalid') return { ok: false, invalid: true, message: pull.message };
  const missing: string[] = [];
  const read = async (field: string, ref: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: { name: string; key: string } }) => {
    const secret = ref.secretKeyRef;
    const source = secret ?? ref.configMapKeyRef;
    if (!source) return undefined;
    const value = secret
      ? await runs.secretValue(namespace, source.name, source.key)
      : await runs.configMapValue(namespace, source.name, source.key);
    if (value === undefined) missing.push(`${field}: ${secret ? 'Secret' : 'ConfigMap'} ${namespace}/${source.name} has no key "${source.key}"`);
    else if (secret) registerSecret(value);
    return value;
  };
  const env: Record<string, string> = {};
  for (const [index, variable] of (job.env ?? []).entries()) {
    const value = variable.valueFrom ? await read(`spec.job.env[${index}] ${variable.name}`, variable.valueFrom) : variable.value;
    if (value !== undefined) env[variable.name] = value;
  }
  const files: JobInputs['files'] = [];
  for (const [index, file] of (job.files ?? []).entries()) {
    const content = await read(`spec.job.files[${index}] ${file.path}`, file);
    if (content !== undefined) files.push({ path: file.path, content, secret: file.secretKeyRef !== undefined });
  }
  if (pull.kind === 'missing') missing.push(pull.message);
  return missing.length > 0 ? { ok: false, message: `waiting for ${missing.join('; ')}` } : { ok: true, inputs: { env, files, registry: pull.kind === 'ok' ? pull.auth : undefined } };
}
