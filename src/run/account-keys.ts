// Which Runpod accounts the sweeper sweeps: the key of every run the controller holds.
import { parseSpec, type RunpodRun } from '../api/runpodrun.ts';
import { registerSecret, type Logger } from '../log.ts';
import { PROCESS_OWNER } from '../redaction.ts';
import type { RunApi } from './ports/run-api.ts';

/**
 * The API key of every run in the store (finished ones too), each credentials Secret read once. A
 * Secret that holds no usable key is left out (its runs say so in their status) and logged once.
 */
export async function referencedApiKeys(runs: RunpodRun[], secrets: Pick<RunApi, 'runpodKey'>, unusable: { said: Set<string>; logger: Logger }): Promise<string[]> {
  const refs = new Map<string, { namespace: string; secretName: string; key: string }>();
  for (const run of runs) {
    const verdict = parseSpec(run.spec);
    if (!verdict.ok) continue;
    const { secretName, key } = verdict.spec.credentials;
    refs.set(JSON.stringify([run.metadata.namespace, secretName, key]), { namespace: run.metadata.namespace, secretName, key });
  }
  const keys: string[] = [];
  for (const ref of refs.values()) {
    const read = await secrets.runpodKey(ref.namespace, ref.secretName, ref.key).catch(() => undefined);
    if (read?.ok) {
      registerSecret(read.apiKey, PROCESS_OWNER);
      keys.push(read.apiKey);
    } else if (read?.invalid && !unusable.said.has(read.message)) {
      unusable.said.add(read.message);
      unusable.logger.warn({ namespace: ref.namespace, secret: ref.secretName, key: ref.key, problem: read.message }, 'a credentials Secret holds no usable Runpod API key; its account is not swept until it does');
    }
  }
  return keys;
}
