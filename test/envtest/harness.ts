// A real control plane for tests, the way controller-runtime's envtest makes one: etcd and
// kube-apiserver on loopback with random ports, token auth and RBAC on, the CRDs installed and
// served before it returns. No kubelet and no controller-manager run (no GC, no namespace cleanup).
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig} from '@kubernetes/client-node';
import { ApiextensionsV1Api, loadAllYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { PooledKubeConfig } from '../../src/kube/kubeconfig.ts';
import { servingChain } from './serving-chain.ts';
import { Agent, request } from 'undici';

const repoRoot = resolve(import.meta.dirname, '..', '..');
export const defaultCrdDir = join(repoRoot, 'crds');
const startTimeoutMs = 60_000;

export interface ControlPlane {
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  server: string;
  /** etcd and kube-apiserver (none for USE_EXISTING_CLUSTER), for a synchronous kill at process exit. */
  pids: number[];
  stop(): Promise<void>;
}

/** What `up` leaves in its directory so that `down` (another process) can end it. */
interface State { pids: number[] }

export interface StartOptions {
  dir: string;
  crdDir?: string;
  /** Keep etcd and kube-apiserver running after this process exits (the CLI's `up`). */
  detached?: boolean;
  /** Where the servers' ports come from (default: freePort); a test hands out a taken one. */
  freePort?: () => Promise<number>;
}

export async function startControlPlane(options: StartOptions): Promise<ControlPlane> {
  const crdDir = options.crdDir ?? defaultCrdDir;
  if (process.env.USE_EXISTING_CLUSTER === 'true') return useExistingCluster(crdDir);
  const dir = resolve(options.dir);
  // A free port is free only when asked: another process (a pod's sshd, a simulator, another suite's
  // server) may bind it before etcd or kube-apiserver does. Then that server exits, and the wait would
  // meet whoever holds the port (another apiserver's certificate); fresh ports are tried instead.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options, dir, crdDir);
    } catch (error) {
      if (!(error instanceof PortTakenError) || attempt === 3) throw error;
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

class PortTakenError extends Error {}

async function startOnce(options: StartOptions, dir: string, crdDir: string): Promise<ControlPlane> {
  mkdirSync(dir, { recursive: true });
  const { apiserver, etcd } = findAssets();
  const port = options.freePort ?? freePort;
  const [etcdPort, peerPort, apiPort] = [await port(), await port(), await port()];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const children: ChildProcess[] = [];
  const stopChildren = async () => {
    for (const child of children.reverse()) await terminate(child);
  };

  try {
    children.push(startProcess(etcd, [
      '--name', 'envtest', '--data-dir', join(dir, 'etcd'),
      '--listen-client-urls', etcdUrl, '--advertise-client-urls', etcdUrl,
      '--listen-peer-urls', `http://127.0.0.1:${peerPort}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
      '--initial-cluster', `envtest=http://127.0.0.1:${peerPort}`,
      '--unsafe-no-fsync', '--log-level', 'warn',
    ], join(dir, 'etcd.log'), options.detached));
    await waitFor(`etcd at ${etcdUrl}`, async () => (await fetch(`${etcdUrl}/health`)).ok, children);

    const token = randomBytes(24).toString('hex');
    const certDir = join(dir, 'certs');
    mkdirSync(certDir, { recursive: true });
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    writeFileSync(join(dir, 'tokens.csv'), `${token},admin,admin-uid,"system:masters"\n`, { mode: 0o600 });
    children.push(startProcess(apiserver, [
      `--etcd-servers=${etcdUrl}`, `--cert-dir=${certDir}`,
      `--secure-port=${apiPort}`, '--bind-address=127.0.0.1', '--advertise-address=127.0.0.1',
      '--service-cluster-ip-range=10.0.0.0/24', '--authorization-mode=RBAC',
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--service-account-issuer=https://kubernetes.default.svc',
      `--service-account-key-file=${join(dir, 'sa.key')}`, `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
      '--disable-admission-plugins=ServiceAccount', '--allow-privileged=true',
      // As strict as clusters that enable it (OpenShift): setting blockOwnerDeletion needs update on the
      // owner's finalizers, which deploy/'s RBAC must grant.
      '--enable-admission-plugins=OwnerReferencesPermissionEnforcement',
      // Tests watch for a deadline measured in seconds: keep event TTL default, but no profiling noise.
      '--profiling=false',
    ], join(dir, 'kube-apiserver.log'), options.detached));

    const server = `https://127.0.0.1:${apiPort}`;
    const certFile = join(certDir, 'apiserver.crt');
    // The chain is read again at each try (it may be caught mid-write): the one that answered is kept.
    let kubeConfig: KubeConfig | undefined;
    await waitFor(`kube-apiserver at ${server}`, async () => {
      const chain = servingChain(certFile);
      if (chain === undefined) return false;
      kubeConfig = adminKubeConfig(server, Buffer.from(chain).toString('base64'), token);
      return isReady(kubeConfig);
    }, children);
    if (!kubeConfig) throw new Error('envtest: no serving certificate');
    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, kubeConfig.exportConfig(), { mode: 0o600 });
    await installCrds(kubeConfig, crdDir);

    const state: State = { pids: children.map((child) => child.pid ?? 0).filter((pid) => pid > 0) };
    writeFileSync(join(dir, 'state.json'), JSON.stringify(state));
    return {
      kubeconfigPath, kubeConfig, server, pids: state.pids,
      stop: async () => {
        await stopChildren();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await stopChildren();
    throw error;
  }
}

/** Ends a control plane that `up` left running (from its state file), and removes its directory. */
export async function stopControlPlane(dir: string): Promise<void> {
  const stateFile = join(resolve(dir), 'state.json');
  if (existsSync(stateFile)) {
    const state = JSON.parse(readFileSync(stateFile, 'utf8')) as State;
    // The API server first, then etcd: the reverse of the start order.
    for (const pid of [...state.pids].reverse()) await terminatePid(pid);
  }
  rmSync(resolve(dir), { recursive: true, force: true });
}

/** The binaries, found as envtest finds them, else built once per machine and cached. */
export function findAssets(): { apiserver: string; etcd: string } {
  const fromEnv = (name: string, file: string) =>
    process.env[name] ?? (process.env.KUBEBUILDER_ASSETS ? join(process.env.KUBEBUILDER_ASSETS, file) : undefined);
  let apiserver = fromEnv('TEST_ASSET_KUBE_APISERVER', 'kube-apiserver');
  let etcd = fromEnv('TEST_ASSET_ETCD', 'etcd');
  if (!apiserver || !etcd) {
    const built = execFileSync('bash', [join(import.meta.dirname, 'build-assets.sh'), '--control-plane'], {
      encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'],
    }).trim();
    apiserver ??= join(built, 'kube-apiserver');
    etcd ??= join(built, 'etcd');
  }
  for (const binary of [apiserver, etcd]) {
    if (!existsSync(binary)) throw new Error(`envtest: ${binary} does not exist (check KUBEBUILDER_ASSETS / TEST_ASSET_*)`);
  }
  return { apiserver, etcd };
}

async function useExistingCluster(crdDir: string): Promise<ControlPlane> {
  const kubeConfig = new PooledKubeConfig();
  kubeConfig.loadFromDefault();
  await installCrds(kubeConfig, crdDir);
  const kubeconfigPath = process.env.KUBECONFIG?.split(':')[0] ?? join(homedir(), '.kube', 'config');
  return { kubeconfigPath, kubeConfig, server: kubeConfig.getCurrentCluster()?.server ?? '', pids: [], stop: async () => {} };
}

function adminKubeConfig(server: string, caData: string, token: string): KubeConfig {
  const kubeConfig = new PooledKubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'envtest', server, caData, skipTLSVerify: false }],
    users: [{ name: 'admin', token }],
    contexts: [{ name: 'envtest', cluster: 'envtest', user: 'admin', namespace: 'default' }],
    currentContext: 'envtest',
  });
  return kubeConfig;
}

async function isReady(kubeConfig: KubeConfig): Promise<boolean> {
  return (await kubeGet(kubeConfig, '/readyz')).status === 200;
}

/** A raw GET with the kubeconfig's credentials (client-node has no typed call for /readyz or discovery). */
async function kubeGet(kubeConfig: KubeConfig, path: string): Promise<{ status: number; body: string }> {
  const cluster = kubeConfig.getCurrentCluster();
  const token = kubeConfig.getCurrentUser()?.token;
  const ca = cluster?.caData ? Buffer.from(cluster.caData, 'base64').toString() : undefined;
  const dispatcher = new Agent({ connect: { ca, rejectUnauthorized: !cluster?.skipTLSVerify } });
  try {
    const response = await request(`${cluster?.server ?? ''}${path}`, {
      dispatcher, headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    return { status: response.statusCode, body: await response.body.text() };
  } finally {
    await dispatcher.close();
  }
}

/** Creates or replaces every CRD in crdDir and waits until discovery serves each of them. */
export async function installCrds(kubeConfig: KubeConfig, crdDir: string): Promise<void> {
  const api = kubeConfig.makeApiClient(ApiextensionsV1Api);
  // loadAllYaml deserializes into client-node's models: a plain object would lose every field whose
  // JSON name differs from the model's (default, enum, x-kubernetes-validations) when serialized.
  const crds = readdirSync(crdDir).filter((file) => /\.ya?ml$/.test(file))
    .flatMap((file) => loadAllYaml(readFileSync(join(crdDir, file), 'utf8')) as V1CustomResourceDefinition[])
    .filter((doc) => doc.kind === 'CustomResourceDefinition');
  for (const crd of crds) {
    const name = crd.metadata?.name ?? '';
    try {
      const existing = await api.readCustomResourceDefinition({ name });
      crd.metadata = { ...crd.metadata, resourceVersion: existing.metadata?.resourceVersion };
      await api.replaceCustomResourceDefinition({ name, body: crd });
    } catch (error) {
      if ((error as { code?: number }).code !== 404) throw error;
      await api.createCustomResourceDefinition({ body: crd });
    }
  }
  for (const crd of crds) {
    const { group, names, versions } = crd.spec;
    for (const version of versions.filter((v) => v.served)) {
      await waitFor(`discovery of ${names.plural}.${group}/${version.name}`, async () => {
        const response = await kubeGet(kubeConfig, `/apis/${group}/${version.name}`);
        if (response.status !== 200) return false;
        const list = JSON.parse(response.body) as { resources?: { name: string }[] };
        return list.resources?.some((resource) => resource.name === names.plural) ?? false;
      });
    }
  }
}

const logOf = new WeakMap<ChildProcess, string>();

function startProcess(binary: string, args: string[], logFile: string, detached = false): ChildProcess {
  const log = openSync(logFile, 'a');
  // Unless detached (`up`), the kernel kills the server when the process that started it dies, however it
  // dies (a crash, an uncaught error, SIGKILL): a failed demo or test run can never leave etcd running.
  // setpriv execs the server, so the child's pid is the server's own.
  const [command, argv] = detached ? [binary, args] : ['setpriv', ['--pdeathsig', 'KILL', '--', binary, ...args]];
  const child = spawn(command, argv, { stdio: ['ignore', log, log], detached });
  logOf.set(child, logFile);
  // Never keep the test process alive for its servers: whoever started them stops them (stop(),
  // `down`, or the synchronous kill at exit in test/support/cluster.ts).
  child.unref();
  return child;
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || !child.pid) return;
  const exited = new Promise((done) => child.once('exit', done));
  child.kill('SIGTERM');
  const timedOut = await Promise.race([exited.then(() => false), sleep(10_000).then(() => true)]);
  if (timedOut) child.kill('SIGKILL');
}

async function terminatePid(pid: number): Promise<void> {
  const alive = () => { try { process.kill(pid, 0); return true; } catch { return false; } };
  if (!alive()) return;
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 100 && alive(); i++) await sleep(100);
  if (alive()) process.kill(pid, 'SIGKILL');
}

/** Until `check` holds; a server of `children` that exited meanwhile ends the wait at once (PortTakenError when its port was taken). */
async function waitFor(what: string, check: () => Promise<boolean>, children: readonly ChildProcess[] = []): Promise<void> {
  const deadline = Date.now() + startTimeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    const exited = children.find((child) => child.exitCode !== null || child.signalCode !== null);
    if (exited) {
      const log = logOf.get(exited) ?? '';
      const tail = existsSync(log) ? readFileSync(log, 'utf8').slice(-2000) : '';
      const message = `envtest: ${exited.spawnargs.find((arg) => /etcd|kube-apiserver/.test(arg)) ?? 'a server'} exited while waiting for ${what}:\n${tail}`;
      throw /address already in use/.test(tail) ? new PortTakenError(message) : new Error(message);
    }
    try {
      if (await check()) return;
    } catch (error) {
      lastError = error;
    }
    await sleep(100);
  }
  throw new Error(`envtest: timed out waiting for ${what}${lastError instanceof Error ? `: ${lastError.message}` : ''}`);
}

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? done(address.port) : fail(new Error('no port'))));
    });
  });
}
