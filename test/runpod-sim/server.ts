// The simulator's HTTP front: one handler served on loopback TCP (for clients on the machine) and on
// a Unix socket (which each pod's relay forwards its own 127.0.0.1:<port> to). Order per v2 request:
// route, auth, injected request faults, quota, pod-key scope, account-key scopes, handler.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { createLogger } from '../../src/log.ts';
import { adminRoutes, type AdminHandler } from './admin.ts';
import { scopeRefusal } from './account.ts';
import { apiRoutes, podKeyAllowed, type ApiHandler } from './api.ts';
import { parseConfig, type SimConfigInput } from './config.ts';
import { SimCore } from './core.ts';
import { matchesRequest } from './faults.ts';
import { startForwards, type ForwardServers } from './forward.ts';
import { fail, Router, replyStatus, writeReply, type Reply } from './http.ts';
import { problem, problems } from './problems.ts';
import type { Caller } from './stats.ts';

export type { SimConfigInput } from './config.ts';

export interface StartSimulatorOptions {
  /** 0 or absent: a random free port. */
  port?: number;
  apiKeys: string[];
  /** Partial config; defaults fill the rest. */
  config?: SimConfigInput;
}

export interface RunningSimulator {
  /** "http://127.0.0.1:<port>/v2", the same inside every pod. */
  baseUrl: string;
  /** "http://127.0.0.1:<port>/_sim" */
  adminUrl: string;
  port: number;
  stop(): Promise<void>;
}

const SOCKET_ROOT = '/var/lib/runpod-sim';
const REQUIRED_COMMANDS = ['unshare', 'nsenter', 'setpriv', 'socat', 'ip', 'ss', 'mount', 'sh'];

export async function startSimulator(options: StartSimulatorOptions): Promise<RunningSimulator> {
  const config = parseConfig(options.config ?? {});
  if (options.apiKeys.length === 0) throw new Error('the simulator needs at least one account API key');
  checkMachine();
  removeStaleSocketDirs();

  const log = createLogger(process.env.RUNPOD_SIM_LOG_LEVEL ?? 'silent');
  const socketDir = `${SOCKET_ROOT}/${process.pid}-${randomBytes(4).toString('hex')}`;
  mkdirSync(socketDir, { recursive: true, mode: 0o755 });
  const apiSocket = `${socketDir}/api.sock`;

  let forwards: ForwardServers;
  try {
    forwards = await startForwards(config, socketDir);
  } catch (error) {
    rmSync(socketDir, { recursive: true, force: true });
    throw error;
  }
  const host = { config, apiPort: 0, apiSocket, volumesDir: `${socketDir}/volumes`, forwards: forwards.forwards };
  const core = new SimCore(config, options.apiKeys, host, log);
  const handle = requestHandler(core);
  // Idle keep-alive connections are closed after a minute, not node's 5 s: a client that reuses one
  // just as the server closes it meets a reset (undici's fetch, on a loaded machine), which Runpod's
  // load balancers, keeping idle connections far longer, do not cause.
  const tcp = createServer({ keepAliveTimeout: 60_000 }, handle);
  const unix = createServer({ keepAliveTimeout: 60_000 }, handle);
  let port = 0;
  try {
    tcp.listen(options.port ?? 0, '127.0.0.1');
    await once(tcp, 'listening');
    unix.listen(apiSocket);
    await once(unix, 'listening');
    const address = tcp.address();
    port = address !== null && typeof address === 'object' ? address.port : 0;
    // Inside a pod the API is on 127.0.0.1:<port> too, so a forward cannot take that port.
    const taken = config.network.forward.findIndex((forward) => forward.podPort === port);
    if (taken >= 0) throw new Error(`invalid simulator config: network.forward[${taken}].podPort ${port} is the simulator's own port (inside pods the API is there)`);
  } catch (error) {
    tcp.close();
    unix.close();
    await forwards.close();
    rmSync(socketDir, { recursive: true, force: true });
    throw error;
  }
  host.apiPort = port;
  log.info({ port, apiSocket }, 'runpod simulator listening');

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await core.stopAll();
      await Promise.all([closeServer(tcp), closeServer(unix), forwards.close()]);
      rmSync(socketDir, { recursive: true, force: true });
    })();
    return stopping;
  };
  return { baseUrl: `http://127.0.0.1:${port}/v2`, adminUrl: `http://127.0.0.1:${port}/_sim`, port, stop };
}

function requestHandler(core: SimCore): (req: IncomingMessage, res: ServerResponse) => void {
  const api = new Router<ApiHandler>(apiRoutes);
  const admin = new Router<AdminHandler>(adminRoutes);
  return (req, res) => {
    res.on('error', () => undefined);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = req.method ?? 'GET';
    const serve = url.pathname.startsWith('/_sim/') ? serveAdmin(core, admin, req, method, url) : serveApi(core, api, req, method, url);
    serve
      .then(({ reply, headers }) => writeReply(res, reply, headers))
      .catch((error: unknown) => {
        core.log.error({ err: error, method, path: url.pathname }, 'simulator handler failed');
        writeReply(res, { kind: 'problem', problem: problem(500, 'simulator error') }, {});
      });
  };
}

interface Served {
  reply: Reply;
  headers: Record<string, string>;
}

async function serveAdmin(core: SimCore, router: Router<AdminHandler>, req: IncomingMessage, method: string, url: URL): Promise<Served> {
  const match = router.match(method, url.pathname);
  if (!match.route) {
    return { reply: match.allowed.length > 0 ? fail(problem(405, `use ${match.allowed.join(', ')}`)) : fail(problems.notFound()), headers: {} };
  }
  return { reply: await match.route.handler(core, req, match.params), headers: {} };
}

async function serveApi(core: SimCore, router: Router<ApiHandler>, req: IncomingMessage, method: string, url: URL): Promise<Served> {
  const match = router.match(method, url.pathname);
  let caller: Caller = 'anonymous';
  const done = (reply: Reply, headers: Record<string, string> = {}): Served => {
    if (reply.kind === 'hold') {
      core.held.add(req.socket);
      req.socket.once('close', () => {
        core.held.delete(req.socket);
        core.stats.record(caller, method, match.template, 0);
      });
    } else {
      core.stats.record(caller, method, match.template, replyStatus(reply));
    }
    core.log.debug({ method, path: url.pathname, status: replyStatus(reply) }, 'request');
    return { reply, headers };
  };

  const authorization = req.headers.authorization;
  const token = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
  if (token === undefined) return done(fail(problems.missingKey()));
  const principal = core.state.principal(token);
  if (!principal) return done(fail(problems.invalidKey()));
  caller = principal.kind;
  // Pod keys have their own quota per pod; account keys one per key.
  const quotaKey = principal.kind === 'pod' ? `pod:${principal.podId}` : principal.key;

  const injected429 = core.faults.take('rate-limit', (fault) => matchesRequest(fault, method, match.template, url.searchParams));
  if (injected429) {
    return done(fail(problems.rateLimited('minute', injected429.retryAfterSeconds)), core.limiter.peek(quotaKey));
  }
  // The account's key is refused, not the pods' own keys (each a key of its own).
  const refused = principal.kind === 'account' ? core.faults.take('refuse', (fault) => matchesRequest(fault, method, match.template, url.searchParams)) : undefined;
  if (refused) return done(fail(refused.status === 401 ? problems.invalidKey() : problems.forbidden()), core.limiter.peek(quotaKey));
  const injected5xx = core.faults.take('http-5xx', (fault) => matchesRequest(fault, method, match.template, url.searchParams));
  if (injected5xx) return done(fail(problems.internal(injected5xx.status)), core.limiter.peek(quotaKey));

  const quota = core.limiter.consume(quotaKey);
  if (!quota.allowed) return done(fail(problems.rateLimited(quota.window, quota.retryAfter)), quota.headers);

  if (!match.route) {
    const reply = match.allowed.length > 0 ? fail(problem(405, 'The requested method is not allowed for this path.', { headers: { Allow: match.allowed.join(', ') } })) : fail(problems.notFound());
    return done(reply, quota.headers);
  }
  if (!podKeyAllowed(method, match.template, match.params, principal)) return done(fail(problems.forbidden()), quota.headers);
  const unscoped = scopeRefusal(principal, method, match.template);
  if (unscoped) return done(fail(unscoped), quota.headers);
  const reply = await match.route.handler(core, { req, principal, params: match.params, query: url.searchParams });
  return done(reply, quota.headers);
}

let machineChecked = false;

/** Once per process (a test file starts many simulators): one shell names every missing command. */
function checkMachine(): void {
  if (machineChecked) return;
  if (process.getuid?.() !== 0) throw new Error('the Runpod simulator runs real pods in their own namespaces and needs root');
  const missing = execFileSync('sh', ['-c', 'for c in "$@"; do command -v "$c" >/dev/null || printf "%s\\n" "$c"; done', 'check', ...REQUIRED_COMMANDS], { encoding: 'utf8' })
    .split('\n').filter((command) => command !== '');
  if (missing.length > 0) throw new Error(`the Runpod simulator needs these commands: ${missing.join(', ')} (Debian: util-linux, iproute2, socat)`);
  // The pods' /workspace is a tmpfs mounted over this directory inside each pod; it must exist on the
  // machine beforehand (creating it inside a pod would create it on the machine anyway).
  if (!existsSync('/workspace')) mkdirSync('/workspace', { mode: 0o755 });
  machineChecked = true;
}

/** Removes socket directories left by simulators that died without stopping. */
function removeStaleSocketDirs(): void {
  if (!existsSync(SOCKET_ROOT)) return;
  for (const entry of readdirSync(SOCKET_ROOT)) {
    const pid = Number(entry.split('-')[0]);
    if (!Number.isInteger(pid) || pid <= 0 || isAlive(pid)) continue;
    rmSync(`${SOCKET_ROOT}/${entry}`, { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
}
