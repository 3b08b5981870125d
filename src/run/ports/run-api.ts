// The Kubernetes side of a run: the RunpodRun itself, its credentials and its owned SSH Secret.
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { apiVersion, finalizer, group, kind, plural, version, type RunpodRun } from '../../api/runpodrun.ts';
import type { RunpodRunStatus } from '../../api/status.ts';
import { isAlreadyExists, isNotFound } from '../../kube/errors.ts';
import { addFinalizer, removeFinalizer } from '../../kube/finalizers.ts';
import { changeOf, StatusWriter } from '../../kube/status.ts';
import { registerSecret } from '../../log.ts';
import type { S3Credentials } from '../../results/s3-settings.ts';
import { redactStatus } from './status-redaction.ts';
import { sshSecretKeys, sshSecretName } from '../../api/ssh-secret.ts';
import { printableRuns, readRunpodKey } from '../observe/runpod-key.ts';

export interface SshSecret { clientPrivateKey: string; clientPublicKey: string; hostPrivateKey: string; hostPublicKey: string }

const sshKeys = sshSecretKeys;

/** A Secret's key, decoded; undefined when it is missing or empty. */
const decodedKey = (secret: V1Secret, key: string): string | undefined => {
  const value = secret.data?.[key];
  return value ? Buffer.from(value, 'base64').toString('utf8') : undefined;
};

const ownedBy = (secret: V1Secret, run: RunpodRun): boolean =>
  secret.metadata?.ownerReferences?.some((ref) => ref.uid === run.metadata.uid) ?? false;

const foreignSshSecretMessage = (run: RunpodRun): string =>
  `Secret ${run.metadata.namespace}/${sshSecretName(run.metadata.name)} exists and is not owned by this run (no ownerReference to uid ${run.metadata.uid}); `
  + 'it is left untouched: delete or rename it (or rename the run), and the run goes on';

export class RunApi {
  #objects: CustomObjectsApi;
  #core: CoreV1Api;
  #status: StatusWriter;

  constructor(kubeConfig: KubeConfig) {
    this.#objects = kubeConfig.makeApiClient(CustomObjectsApi);
    this.#core = kubeConfig.makeApiClient(CoreV1Api);
    this.#status = new StatusWriter({ kubeConfig, resource: { group, version, plural } });
  }

  /** The run as the API server has it now (not a cache: status is the durable record). */
  async get(namespace: string, name: string): Promise<RunpodRun | undefined> {
    try {
      return await this.#objects.getNamespacedCustomObject({ group, version, namespace, plural, name }) as RunpodRun;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * UIDs of every run in the namespace (or all namespaces) as the API server has them now: a list
   * without resourceVersion is a consistent read (from etcd, or from the API server's watch cache
   * only once it has caught up with etcd), never a lagging cache.
   */
  async liveRunUids(namespace: string | undefined): Promise<Set<string>> {
    return new Set((await this.#liveRuns(namespace)).map((run) => run.metadata.uid));
  }

  /**
   * The Runpod registry credentials (status.registry names) that runs may still create a pod with, or
   * whose pod may still pull with: every run not finished, and every run whose pod is not deleted.
   */
  async registriesInUse(namespace: string | undefined): Promise<Set<string>> {
    const needed = (run: RunpodRun): boolean => !['Succeeded', 'Failed'].includes(run.status?.phase ?? '') || run.status?.pod?.state !== 'Deleted';
    return new Set((await this.#liveRuns(namespace)).flatMap((run) => (run.status?.registry && needed(run) ? [run.status.registry.name] : [])));
  }

  async #liveRuns(namespace: string | undefined): Promise<RunpodRun[]> {
    const runs: RunpodRun[] = [];
    let _continue: string | undefined;
    do {
      const page = (namespace
        ? await this.#objects.listNamespacedCustomObject({ group, version, plural, namespace, limit: 500, _continue })
        : await this.#objects.listClusterCustomObject({ group, version, plural, limit: 500, _continue })) as
        { items?: RunpodRun[]; metadata?: { continue?: string } };
      runs.push(...(page.items ?? []));
      _continue = page.metadata?.continue || undefined;
    } while (_continue);
    return runs;
  }

  /** Writes the status when it differs; a stale resourceVersion is a ConflictError (requeued quietly). */
  async writeStatus(run: RunpodRun, status: RunpodRunStatus): Promise<RunpodRun> {
    return (await this.#status.write(run, redactStatus(status))).object;
  }

  /**
   * Records what a step learned (the change from `before` to `after`) so that a 409 cannot throw
   * it away: on a conflict the run is re-read and the same change applied to its fresh status.
   */
  async recordStatusChange(run: RunpodRun, before: RunpodRunStatus, after: RunpodRunStatus, onConflict?: () => void): Promise<RunpodRun> {
    const reread = () => this.get(run.metadata.namespace, run.metadata.name);
    return (await this.#status.update(run, changeOf(redactStatus(before), redactStatus(after)), reread, { onConflict })).object;
  }

  async setFinalizer(run: RunpodRun, present: boolean): Promise<RunpodRun> {
    const resource = { group, version, plural };
    return present
      ? await addFinalizer(this.#objects, resource, run, finalizer)
      : (await removeFinalizer(this.#objects, resource, run, finalizer)) ?? run;
  }

  /** A key of a Secret in the run's namespace; undefined when the Secret or the key is missing or empty. */
  async secretValue(namespace: string, name: string, key: string): Promise<string | undefined> {
    const secret = await this.#readSecret(namespace, name);
    return secret && decodedKey(secret, key);
  }

  /**
   * The run's Runpod API key from its credentials Secret, surrounding whitespace trimmed (a job's
   * secrets are taken as they are: secretValue). A missing Secret or key, or one that holds no usable
   * key, is a message naming the Secret and the key, never the value.
   */
  async runpodKey(namespace: string, name: string, key: string): Promise<{ ok: true; apiKey: string } | { ok: false; invalid: boolean; message: string }> {
    const where = `Secret ${namespace}/${name}`;
    const secret = await this.#readSecret(namespace, name);
    const raw = secret?.data?.[key];
    const missing = { ok: false as const, invalid: false, message: `${where} has no non-empty key "${key}"` };
    if (!raw) return missing;
    const bytes = Buffer.from(raw, 'base64');
    const verdict = readRunpodKey(bytes);
    if (verdict.ok) return verdict;
    if (verdict.empty) return missing;
    // Never shown, but should any path ever print it, it is redacted there.
    registerSecret(bytes.toString('utf8'));
    for (const run of printableRuns(bytes)) registerSecret(run);
    return { ok: false, invalid: true, message: `${where} key "${key}" does not hold a usable Runpod API key: ${verdict.problem} (the value is not shown); write the key alone into the Secret` };
  }

  /**
   * The S3 keys of a run's credentials Secret (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, optional
   * AWS_SESSION_TOKEN), or why they cannot be used: a missing Secret or key is a message, not a throw.
   */
  async s3Credentials(namespace: string, name: string): Promise<{ ok: true; credentials: S3Credentials } | { ok: false; message: string }> {
    const secret = await this.#readSecret(namespace, name);
    if (!secret) return { ok: false, message: `the S3 credentials Secret ${namespace}/${name} (spec.results.s3.credentials.secretName) does not exist` };
    const [accessKeyId, secretAccessKey, sessionToken] = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'].map((key) => decodedKey(secret, key));
    // Every value is a secret: none may reach a log line, an event or the status.
    for (const value of [accessKeyId, secretAccessKey, sessionToken]) registerSecret(value);
    if (!accessKeyId || !secretAccessKey) {
      const missing = [accessKeyId ? [] : ['AWS_ACCESS_KEY_ID'], secretAccessKey ? [] : ['AWS_SECRET_ACCESS_KEY']].flat();
      return { ok: false, message: `the S3 credentials Secret ${namespace}/${name} has no non-empty key ${missing.join(' or ')}` };
    }
    return { ok: true, credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } };
  }

  async configMapValue(namespace: string, name: string, key: string): Promise<string | undefined> {
    try {
      const map = await this.#core.readNamespacedConfigMap({ namespace, name });
      return map.data?.[key] ?? (map.binaryData?.[key] ? Buffer.from(map.binaryData[key], 'base64').toString('utf8') : undefined);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * The run's SSH Secret: its keys when this run owns it (an ownerReference to this run's UID), or
   * `foreign` when a Secret of that name exists that this run does not own (a user's own, or one
   * left by an earlier run of the same name): that one is never overwritten or adopted.
   */
  async readSshSecret(run: RunpodRun): Promise<{ keys?: SshSecret; foreign?: string }> {
    const secret = await this.#readSecret(run.metadata.namespace, sshSecretName(run.metadata.name));
    if (!secret) return {};
    if (!ownedBy(secret, run)) return { foreign: foreignSshSecretMessage(run) };
    const read = (key: string) => Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');
    const keys: SshSecret = {
      clientPrivateKey: read(sshKeys.clientPrivateKey), clientPublicKey: read(sshKeys.clientPublicKey),
      hostPrivateKey: read(sshKeys.hostPrivateKey), hostPublicKey: read(sshKeys.hostPublicKey),
    };
    return Object.values(keys).every(Boolean) ? { keys } : {};
  }

  /** Creates the owned Secret, or completes one this run owns; a Secret this run does not own is refused. */
  async createSshSecret(run: RunpodRun, keys: SshSecret): Promise<void> {
    const { namespace, name, uid } = run.metadata;
    const body: V1Secret = {
      metadata: {
        name: sshSecretName(name), namespace,
        labels: { 'app.kubernetes.io/managed-by': 'runpod-operator', [`${group}/run`]: name },
        ownerReferences: [{ apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true }],
      },
      type: 'Opaque',
      data: Object.fromEntries(Object.entries(sshKeys).map(([field, key]) =>
        [key, Buffer.from(keys[field as keyof SshSecret]).toString('base64')])),
    };
    try {
      await this.#core.createNamespacedSecret({ namespace, body });
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      const existing = await this.#readSecret(namespace, sshSecretName(name));
      if (!existing || !ownedBy(existing, run)) throw new Error(foreignSshSecretMessage(run));
      // Replace only the version we just read: a concurrent change is a conflict, retried from a fresh read.
      body.metadata = { ...body.metadata, resourceVersion: existing.metadata?.resourceVersion };
      await this.#core.replaceNamespacedSecret({ namespace, name: sshSecretName(name), body });
    }
  }

  async #readSecret(namespace: string, name: string): Promise<V1Secret | undefined> {
    try {
      return await this.#core.readNamespacedSecret({ namespace, name });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }
}
