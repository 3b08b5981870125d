// What the plugin reads and changes in the cluster, with the user's own kubeconfig and RBAC: runs, the
// run's SSH Secret, its Runpod key Secret (for Runpod's own log of the pod), a spec field. Refusals are one sentence naming the verb and resource, as kubectl's.
import type { KubeConfig} from '@kubernetes/client-node';
import { CoreV1Api, CustomObjectsApi, PatchStrategy } from '@kubernetes/client-node';
import { z } from 'zod';
import { PooledKubeConfig } from '../kube/kubeconfig.ts';
import { group, plural, version, type RunpodRun } from '../api/runpodrun.ts';
import { sshSecretKeys, sshSecretName } from '../api/ssh-secret.ts';
import { statusCodeOf } from '../kube/errors.ts';
import { requestOptions } from '../kube/request-options.ts';
import { PluginError } from './errors.ts';

export interface Target { kubeConfig: KubeConfig; namespace: string }

export interface TargetFlags { kubeconfig?: string | undefined; context?: string | undefined; namespace?: string | undefined }

/** The user's cluster and namespace: --kubeconfig, else $KUBECONFIG, else ~/.kube/config; --context; -n, else the context's. */
export function loadTarget(flags: TargetFlags): Target {
  const kubeConfig = new PooledKubeConfig();
  try {
    if (flags.kubeconfig) kubeConfig.loadFromFile(flags.kubeconfig);
    else kubeConfig.loadFromDefault();
  } catch (error) {
    throw new PluginError(`cannot read the kubeconfig${flags.kubeconfig ? ` ${flags.kubeconfig}` : ''}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (flags.context) {
    if (!kubeConfig.getContexts().some((context) => context.name === flags.context)) throw new PluginError(`context "${flags.context}" does not exist in the kubeconfig`);
    kubeConfig.setCurrentContext(flags.context);
  }
  if (!kubeConfig.getCurrentCluster()) throw new PluginError('the kubeconfig has no current context: pass --context or --kubeconfig');
  const current = kubeConfig.getContextObject(kubeConfig.getCurrentContext());
  return { kubeConfig, namespace: flags.namespace ?? current?.namespace ?? 'default' };
}

/** A refusal or absence as kubectl says it; anything else is passed on. */
function explained(error: unknown, verb: string, resource: string, namespace: string | undefined): unknown {
  const where = namespace ? ` in namespace "${namespace}"` : '';
  switch (statusCodeOf(error)) {
    case 404: return new PluginError(`${resource} not found${where}`);
    case 403: return new PluginError(`forbidden: you may not ${verb} ${resource}${where} (ask for "${verb}" on it in your RBAC)`);
    case 401: return new PluginError('the cluster refused your credentials (401): log in again or check the kubeconfig');
    default: return error;
  }
}

export async function getRun(target: Target, name: string): Promise<RunpodRun> {
  const api = target.kubeConfig.makeApiClient(CustomObjectsApi);
  try {
    return await api.getNamespacedCustomObject({ group, version, plural, namespace: target.namespace, name }) as RunpodRun;
  } catch (error) {
    throw explained(error, 'get', `runpodruns.${group} "${name}"`, target.namespace);
  }
}

export async function listRuns(target: Target, allNamespaces: boolean): Promise<RunpodRun[]> {
  const api = target.kubeConfig.makeApiClient(CustomObjectsApi);
  try {
    const list: unknown = allNamespaces
      ? await api.listClusterCustomObject({ group, version, plural })
      : await api.listNamespacedCustomObject({ group, version, plural, namespace: target.namespace });
    return (list as { items: RunpodRun[] }).items;
  } catch (error) {
    throw explained(error, 'list', `runpodruns.${group}`, allNamespaces ? undefined : target.namespace);
  }
}

export interface RunSshKeys { clientPrivateKey: string; hostPublicKey: string }

/** The run's client key and pinned host key, from its `<run>-ssh` Secret. */
export async function getSshKeys(target: Target, run: string): Promise<RunSshKeys> {
  const name = sshSecretName(run);
  const api = target.kubeConfig.makeApiClient(CoreV1Api);
  let data: Record<string, string> | undefined;
  try {
    data = (await api.readNamespacedSecret({ name, namespace: target.namespace })).data;
  } catch (error) {
    throw explained(error, 'get', `secrets "${name}"`, target.namespace);
  }
  const read = (key: string): string => Buffer.from(data?.[key] ?? '', 'base64').toString('utf8');
  const keys = { clientPrivateKey: read(sshSecretKeys.clientPrivateKey), hostPublicKey: read(sshSecretKeys.hostPublicKey).trim() };
  if (!keys.clientPrivateKey || !keys.hostPublicKey) throw new PluginError(`secret "${name}" in namespace "${target.namespace}" lacks the run's SSH keys`);
  return keys;
}

/** spec.credentials as the CRD has it (the API server checked the rest). */
const credentialsOf = z.object({ credentials: z.object({ secretName: z.string().min(1), key: z.string().min(1).default('apiKey') }) });

/** The run's Runpod API key, from the Secret its spec.credentials names; `secret` names where it came from (never the key). */
export async function getRunpodKey(target: Target, run: RunpodRun): Promise<{ apiKey: string; secret: string }> {
  const spec = credentialsOf.safeParse(run.spec);
  if (!spec.success) throw new PluginError(`run "${run.metadata.name}" names no Runpod key Secret (spec.credentials)`);
  const { secretName, key } = spec.data.credentials;
  const api = target.kubeConfig.makeApiClient(CoreV1Api);
  let data: Record<string, string> | undefined;
  try {
    data = (await api.readNamespacedSecret({ name: secretName, namespace: target.namespace })).data;
  } catch (error) {
    throw explained(error, 'get', `secrets "${secretName}"`, target.namespace);
  }
  const secret = `secret "${secretName}" (key "${key}") in namespace "${target.namespace}"`;
  const apiKey = Buffer.from(data?.[key] ?? '', 'base64').toString('utf8').trim();
  if (!apiKey) throw new PluginError(`${secret} holds no Runpod API key`);
  return { apiKey, secret };
}

/** A merge patch of the run's spec (what `kubectl patch --type merge` does). */
export async function patchSpec(target: Target, name: string, spec: Record<string, unknown>): Promise<void> {
  const api = target.kubeConfig.makeApiClient(CustomObjectsApi);
  try {
    await api.patchNamespacedCustomObject({ group, version, plural, namespace: target.namespace, name, body: { spec } },
      requestOptions({ timeoutMs: 30_000, contentType: PatchStrategy.MergePatch }));
  } catch (error) {
    throw explained(error, 'patch', `runpodruns.${group} "${name}"`, target.namespace);
  }
}
