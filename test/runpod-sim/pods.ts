// Real pods: each one is an isolated process tree on this machine.
//
//   holder     setpriv --pdeathsig KILL unshare --mount --net --pid --uts --fork --kill-child ...
//              PID 1 of the pod: makes / read-only, mounts the pod's /workspace (kept for the pod's
//              whole life, like its volume), brings lo up, then relays 127.0.0.1:<sim port> inside
//              the pod to the simulator's Unix socket, so the API base URL is the same inside and out.
//              Also one relay per network.forward entry (forward.ts) to a loopback service outside.
//   container  nsenter into the holder, then unshare --mount --pid --fork again: fresh tmpfs /root,
//              /etc/ssh, /run, /tmp, /var/tmp, /dev/shm and a writable /var/lib (the container
//              disk, an overlay wiped on each restart), then execs the image's entrypoint (if the
//              image has one) followed by the words of `args` (argv.ts) as the container's PID 1,
//              with Runpod's env: no shell is added, as on Runpod. Runs again (new tmpfs, new ports)
//              when its main process exits.
//   relays     per connection to a mapped loopback port: a connection to the holder's inbound
//              listener for that private port (socat in the pod, on a Unix socket beside the API's,
//              forking per connection: no process started here per connection); reset at once when
//              nothing listens on the private port (refused, as on Runpod). Tracked and cut here.
//
// Every link carries a parent-death signal, so if the simulator dies, its pods die with it.
// SIGKILL to a PID namespace's init ends every process in it; its parent only exits once they are
// all gone, so awaiting the parent's exit is awaiting the pod's end. The simulator ends a pod or a
// container only that way, never by killing a launcher and counting on those signals: each link arms
// its own only once it runs, so a launcher killed between a fork and the child's prctl leaves the
// rest running, orphaned (waitForInit).
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fstatSync, mkdirSync, openSync } from 'node:fs';
import net from 'node:net';
import { dirname, join } from 'node:path';
import { once } from 'node:events';
import { constants } from 'node:os';
import { Transform } from 'node:stream';
import type { SimConfig } from './config.ts';
import type { PodRecord, PortMapping } from './state.ts';
import { splitArgs } from './argv.ts';
import { clockSkewFunction, skewRunningClock } from './clock.ts';
import { forwardWords, type PodForward } from './forward.ts';
import { outputPipes, type OutputPipe } from './pipes.ts';
import { mountedVolumeId } from './resources.ts';
import { LineSplitter, type PodLog } from './podlog.ts';
import { hasListener, onlyChild, processesInNetNamespace, type ProcInfo, type ProcessTable } from './procs.ts';

const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The $0 of the container's setup script (its init runs under this name until it execs the command). */
const CONTAINER_SETUP_NAME = 'runpod-container';

const HOLDER_SCRIPT = `set -e
# Inbound: one listener per mapped TCP port ("<port>=<Unix socket>" in $INBOUND), bound before / goes
# read-only; the simulator's port relays connect there, and socat forks per connection inside the pod.
for inbound in $INBOUND; do
  sock=\${inbound#*=}
  socat UNIX-LISTEN:"$sock",fork,unlink-early TCP:127.0.0.1:"\${inbound%%=*}" &
  relay=$!
  until [ -S "$sock" ]; do
    if ! kill -0 "$relay" 2>/dev/null; then echo "runpod-sim: cannot listen on $sock" >&2; exit 1; fi
    sleep 0.02
  done
done
mount --make-rprivate /
mount -o remount,bind,ro /
mount -t tmpfs -o mode=0755 tmpfs /workspace
if [ -n "$4" ]; then
  # A network volume: one directory of this machine per volume id, shared by every pod that mounts it.
  mkdir -p "$5"
  mount --bind "$4" "$5"
  # A bind of a directory of the read-only / is read-only too until remounted.
  mount -o remount,bind,rw "$5"
fi
hostname "$1"
ip link set lo up
api_port=$2 api_socket=$3
shift 5
# network.forward: each word "<podPort>=<Unix socket>" is a relay to a loopback service of the machine.
# Each listens before the pod is ready, so a container's first connection finds it.
for forward in "$@"; do
  port=\${forward%%=*}
  socat TCP-LISTEN:"$port",bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:"\${forward#*=}" &
  relay=$!
  until [ -n "$(ss -Hltn "sport = :$port")" ]; do
    if ! kill -0 "$relay" 2>/dev/null; then echo "runpod-sim: cannot listen on forwarded port $port" >&2; exit 1; fi
    sleep 0.02
  done
done
echo ready
exec socat TCP-LISTEN:"$api_port",bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:"$api_socket"
`;

// sshd_config and moduli are copied in (an image would ship them); the machine's host keys are not.
const CONTAINER_SCRIPT = `set -e
# The container disk: / stays read-only (stricter than Runpod), but /var/lib is writable through an
# overlay whose upper layer is a tmpfs of this container, so it is wiped when the container restarts,
# as Runpod wipes the container disk. The tmpfs is detached from /tmp again at once (the overlay keeps it).
mount -t tmpfs -o mode=0700 tmpfs /tmp
mkdir /tmp/upper /tmp/work
chmod 755 /tmp/upper
mount -t overlay overlay -o lowerdir=/var/lib,upperdir=/tmp/upper,workdir=/tmp/work /var/lib
umount -l /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -m 0755 /run/sshd
for f in sshd_config moduli; do if [ -e /etc/ssh/$f ]; then cp /etc/ssh/$f /run/sshd/; fi; done
mount -t tmpfs -o mode=0755 tmpfs /etc/ssh
for f in /run/sshd/*; do if [ -e "$f" ]; then mv "$f" /etc/ssh/; fi; done
mount -t tmpfs -o mode=0755 tmpfs /root
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=1777 tmpfs /var/tmp
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
own_sshd=$1
pod_path=$2
clock_offset=$3
shift 3
if [ "$own_sshd" = 1 ]; then
  # The image's start script: its own sshd with host keys of its own, then the args.
  ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
  ssh-keygen -q -t ecdsa -N '' -f /etc/ssh/ssh_host_ecdsa_key
  if [ -n "\${PUBLIC_KEY:-}" ]; then
    mkdir -p -m 700 /root/.ssh
    printf '%s\n' "$PUBLIC_KEY" >/root/.ssh/authorized_keys
  fi
  /usr/sbin/sshd -D -e -o LogLevel=VERBOSE </dev/null &
fi
# clock-skew: the host's clock is off, so every container of the pod starts with it (clock.ts).
if [ -n "$clock_offset" ]; then skew_clock "$clock_offset"; fi
set +e
PATH=$pod_path
export PATH
if [ "$#" -eq 0 ]; then
  echo "runpod-sim: the container has no command" >&2
  exit 127
fi
exec "$@"
`;

/**
 * Shell text run first in the container's own mount namespace: each command the image lacks is
 * removed from every directory of PATH that has it, by an overlay whose top layer holds a whiteout
 * for it (so `command -v`, `ls` and an absolute path all find nothing). The whiteouts live on a
 * tmpfs that is detached again at once (the overlay keeps it); /tmp is mounted fresh afterwards.
 */
export function hideCommandsScript(commands: readonly string[]): string {
  if (commands.length === 0) return '';
  for (const command of commands) if (!/^[A-Za-z0-9._+-]+$/.test(command)) throw new Error(`not a command name: ${command}`);
  return `set -e
mount -t tmpfs -o mode=0700 tmpfs /tmp
for d in ${PATH.split(':').join(' ')}; do
  if [ -L "$d" ] || [ ! -d "$d" ]; then continue; fi
  w=/tmp/whiteouts$(printf %s "$d" | tr / _)
  for c in ${commands.join(' ')}; do
    if [ -e "$d/$c" ] || [ -L "$d/$c" ]; then mkdir -p "$w" && mknod "$w/$c" c 0 0; fi
  done
  if [ -d "$w" ]; then mount -t overlay overlay -o "lowerdir=$w:$d" "$d"; fi
done
umount -l /tmp
`;
}

export interface PodHostContext {
  config: SimConfig;
  /** The simulator's TCP port: pods reach the API on 127.0.0.1 at this same port. */
  apiPort: number;
  apiSocket: string;
  /** Where network volumes live on this machine (one directory per volume id). */
  volumesDir: string;
  /** Loopback services of the machine reachable inside every pod (config network.forward). */
  forwards: readonly PodForward[];
}

interface Container {
  proc: ChildProcess;
  listeners: Map<number, net.Server>;
  /** Set when the simulator itself ends the container (stop, restart, delete): no automatic restart. */
  intentional: boolean;
  /** Set when the simulator SIGKILLs it: the launcher's exit status does not say so (unshare cannot re-raise SIGKILL). */
  killed: boolean;
  /** Resolves once its output is read to the end and its exit narrated. */
  closed: Promise<void>;
}

export class RealPod {
  readonly record: PodRecord;
  private readonly ctx: PodHostContext;
  private holder: ChildProcess | null = null;
  private holderExited: Promise<void> = Promise.resolve();
  private initPid: number | null = null;
  /**
   * The pod's network namespace (its processes are those in it), held open from boot on: a namespace's
   * inode number goes to the next namespace made once it is freed, so without this a later pod (its
   * holder forked before this pod's delete, its namespaces made after it) would count as this pod's
   * leak. Let go once the pod is deleted and nothing is left in it, or when the simulator stops.
   */
  private netNs: string | null = null;
  private netNsFd: number | null = null;
  private container: Container | null = null;
  /** The current port mappings' listeners; kept across a restart in place, replaced otherwise. */
  private lastListeners: Map<number, net.Server> | null = null;
  /** Open relays: the connection to the pod's inbound listener, and the client's. */
  private readonly relays = new Map<net.Socket, net.Socket>();
  private restartTimer: NodeJS.Timeout | null = null;
  /** Containers started so far (names each one's output pipes). */
  private starts = 0;
  /** The container that exited on its own and whose restart is pending (null once a stop, start or delete overtakes it). */
  private exitedOnItsOwn: Container | null = null;
  private destroyed = false;
  private log = '';
  /** The pod's lines for GET /v2/pods/{id}/logs (kept by SimCore: they outlive a fresh holder). */
  private readonly podLog: PodLog;

  constructor(record: PodRecord, ctx: PodHostContext, podLog: PodLog) {
    this.record = record;
    this.ctx = ctx;
    this.podLog = podLog;
  }

  /** The host directory and mount path of the pod's network volume (mounts.network), or two empty words. */
  private networkVolume(): [string, string] {
    const network = (this.record.spec.mounts as { network?: { volumeId: string; path: string }[] }).network?.[0];
    if (!network) return ['', ''];
    const dir = join(this.ctx.volumesDir, network.volumeId.replace(/[^A-Za-z0-9._-]/g, '_'));
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    return [dir, network.path];
  }

  /** Boots the pod: holder first, then its container. Failures are logged and leave the pod in ERROR. */
  async boot(): Promise<void> {
    // No image is pulled here (the machine's own files are the pod's); the platform's narration is kept.
    this.podLog.system(`Pulling image ${this.record.spec.image}`);
    const holder = spawn(
      'setpriv',
      ['--pdeathsig', 'KILL', 'unshare', '--mount', '--net', '--pid', '--uts', '--fork', '--mount-proc', '--kill-child=SIGKILL',
        'sh', '-c', HOLDER_SCRIPT, 'runpod-pod', this.record.id, String(this.ctx.apiPort), this.ctx.apiSocket, ...this.networkVolume(),
        ...forwardWords(this.ctx.forwards)],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH, INBOUND: tcpPorts(this.record.spec.ports).map((port) => `${port}=${this.inboundSocket(port)}`).join(' ') } },
    );
    this.holder = holder;
    this.holderExited = exitOf(holder, Infinity);
    const holderErr = new LineSplitter();
    holder.stderr.on('data', (chunk: Buffer) => {
      this.append(chunk);
      // Only the holder script's own word is the platform's: its relays' complaints (a socat's broken
      // pipe) and its launcher's about the kill at a delete are the simulator's plumbing.
      for (const line of holderErr.push(chunk)) if (line.startsWith('runpod-sim: ') && !this.destroyed) this.podLog.system(line.slice(12));
    });
    const ready = new Promise<boolean>((resolve) => {
      let buffered = '';
      holder.stdout.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        if (buffered.includes('ready\n')) resolve(true);
      });
      holder.on('exit', () => resolve(false));
      holder.on('error', (error) => {
        this.note(`cannot start the pod: ${error.message}`);
        resolve(false);
      });
    });
    void this.holderExited.then(() => this.onHolderExit());
    if (!(await ready) || this.destroyed) return;
    this.podLog.system(`Pulled image ${this.record.spec.image}`);
    const pid = holder.pid === undefined ? null : onlyChild(holder.pid);
    this.initPid = pid;
    if (pid !== null) this.pinNetNamespace(pid);
    if (pid === null || this.netNs === null) {
      this.fail('could not find the pod holder process');
      return;
    }
    if (this.record.status === 'RUNNING') await this.startContainer(false);
  }

  /** Starts the container; new port mappings unless `keepPorts` (restart in place). */
  async startContainer(keepPorts: boolean): Promise<void> {
    this.exitedOnItsOwn = null;
    if (this.destroyed || this.initPid === null || this.container) return;
    const listeners = keepPorts && this.lastListeners ? this.lastListeners : await this.openListeners();
    this.lastListeners = listeners;
    this.starts += 1;
    const fifo = (name: string): string => join(dirname(this.ctx.apiSocket), `${name}-${this.record.id}-${this.starts}.fifo`);
    const [stdout, stderr] = await outputPipes(fifo('out'), fifo('err'));
    if (this.destroyed || this.container) {
      closePipe(stdout);
      closePipe(stderr);
      if (!keepPorts) closeAll(listeners);
      return;
    }
    const ports = this.portMappings(listeners);
    const image = this.ctx.config.images[this.record.spec.image];
    // The setup above runs with the simulator's PATH; the container's own (the create env may set
    // it) applies from the exec of its command on, as in Docker.
    const env = this.containerEnv(ports);
    this.podLog.system('Created container');
    const proc = spawn(
      'setpriv',
      ['--pdeathsig', 'KILL', 'nsenter', '--target', String(this.initPid), '--mount', '--net', '--pid', '--uts', '--',
        'setpriv', '--pdeathsig', 'KILL', 'unshare', '--mount', '--pid', '--fork', '--mount-proc', '--kill-child=SIGKILL',
        'sh', '-c', hideCommandsScript(image?.withoutCommands ?? []) + clockSkewFunction(PATH.split(':')) + CONTAINER_SCRIPT, CONTAINER_SETUP_NAME,
        image?.ownSshd ? '1' : '0', env.PATH ?? PATH, this.record.clockOffsetSeconds === 0 ? '' : String(this.record.clockOffsetSeconds),
        ...(image?.entrypoint ?? []), ...this.command()],
      { stdio: ['ignore', stdout.writeFd, stderr.writeFd], env: { ...env, PATH } },
    );
    // The container holds the write ends now: the readers end once it (and all it started) is gone.
    stdout.closeWriteEnd();
    stderr.closeWriteEnd();
    const [out, err] = [new LineSplitter(), new LineSplitter()];
    stdout.reader.on('data', (chunk: Buffer) => this.containerOutput(chunk, out));
    stderr.reader.on('data', (chunk: Buffer) => this.containerOutput(chunk, err));
    const exited = new Promise<string>((resolve) => {
      proc.once('exit', (code, signal) => {
        const [status, name] = container.killed ? [137, 'SIGKILL'] : [code ?? 128 + (signal ? constants.signals[signal] : 0), signal];
        resolve(`Container exited with code ${status}${name ? ` (${name})` : ''}`);
      });
      proc.once('error', (error) => {
        this.note(`cannot start the container: ${error.message}`);
        resolve('Container did not start');
      });
    });
    proc.on('spawn', () => this.podLog.system('Started container'));
    const drained = (pipe: OutputPipe): Promise<void> => new Promise((resolve) => {
      pipe.reader.once('close', () => resolve());
      pipe.reader.on('error', () => pipe.reader.destroy());
    });
    // Its last lines first, then its exit: the order a reader of the log expects.
    const closed = Promise.all([exited, drained(stdout), drained(stderr)]).then(([exit]) => {
      for (const line of [...out.end(), ...err.end()]) this.podLog.add('container', line);
      this.podLog.system(exit);
    });
    const container: Container = { proc, listeners, intentional: false, killed: false, closed };
    this.container = container;
    const now = Date.now();
    this.record.startedAt = now;
    this.record.reachableAfter = Math.max(this.record.reachableAfter, now + this.ctx.config.timings.bootDelayMs);
    this.record.container = { startedAt: now, ports };
    proc.on('exit', (code, signal) => this.onContainerExit(container, code, signal));
  }

  /**
   * The words of `args` (of `pods.defaultArgs`, the image's CMD, when args are empty). Args that do
   * not split give no command: the container exits at once and restart-loops, as a broken one does.
   */
  private command(): string[] {
    const args = this.record.spec.args.trim() === '' ? this.ctx.config.pods.defaultArgs : this.record.spec.args;
    try {
      return splitArgs(args);
    } catch (error) {
      this.note(`args do not split into words: ${(error as Error).message}`);
      return [];
    }
  }

  /** Ends the container (stop action, or before a restart); the pod's /workspace stays. */
  async stopContainer(keepPorts = false): Promise<void> {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = null;
    this.exitedOnItsOwn = null;
    const container = this.container;
    this.record.container = null;
    this.killRelays();
    if (container) {
      container.intentional = true;
      await killTree(container);
      await exitOf(container.proc);
      await closedOf(container);
      if (this.container === container) this.container = null;
    }
    if (!keepPorts && this.lastListeners) {
      closeAll(this.lastListeners);
      this.lastListeners = null;
    }
    await this.relaysGone();
  }

  /**
   * clock-skew: the pod's host clock is off by `offsetSeconds` from now on, for the running container
   * (once this resolves) and for every container started later.
   */
  async skewClock(offsetSeconds: number): Promise<void> {
    this.record.clockOffsetSeconds = offsetSeconds;
    const launcher = this.container?.proc.pid;
    if (launcher === undefined || this.destroyed) return;
    if (!(await skewRunningClock(launcher, CONTAINER_SETUP_NAME, offsetSeconds, PATH.split(':'), PATH))) {
      this.note('clock-skew: the running container ended before its clock could be skewed');
    }
  }

  async restartContainer(): Promise<void> {
    this.podLog.system('Restarting container');
    await this.stopContainer(true);
    this.record.restarts += 1;
    await this.startContainer(true);
  }

  /** Kills everything of the pod and resolves once none of its processes is left. */
  async destroy(): Promise<void> {
    if (this.destroyed) return this.holderExited;
    this.destroyed = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.exitedOnItsOwn = null;
    const container = this.container;
    if (container) {
      container.intentional = true;
      // Killed with the pod's namespace below, SIGKILL all the same.
      container.killed = true;
    }
    const holder = this.holder;
    if (holder && this.initPid === null) {
      // Deleted while booting: wait for the init (killing the holder before it would not do, see
      // waitForInit), and hold its namespace, so the leak check can still see into it.
      const init = await waitForInit(holder, 1);
      if (init !== null) {
        this.initPid = init;
        this.pinNetNamespace(init);
      }
    }
    if (holder && this.initPid !== null && isRunning(holder)) {
      // Only the init: the kernel kills the namespace (nested container included), and the holder
      // exits once the init is reaped, i.e. once nothing of the pod runs. Killing the holder too
      // would let it exit while the namespace is still being torn down.
      tryKill(this.initPid);
    } else if (holder) {
      killChild(holder);
    }
    this.killRelays();
    if (this.lastListeners) closeAll(this.lastListeners);
    this.lastListeners = null;
    await Promise.all([
      holder ? exitOf(holder) : undefined,
      container ? exitOf(container.proc) : undefined,
      this.relaysGone(),
    ]);
    this.container = null;
    // Nothing can enter an empty namespace again: let it go. One with processes left is held, so the leak check lists them.
    if (this.processes().length === 0) this.unpinNetNamespace();
  }

  /** The pod's network namespace ("net:[<inode>]") while it is held, the key of its processes. */
  get netNamespace(): string | null {
    return this.netNs;
  }

  /** Processes of this pod still on the machine (for a deleted pod: leaks). */
  processes(table?: ProcessTable): ProcInfo[] {
    if (this.netNs === null) return [];
    return processesInNetNamespace(this.netNs, table);
  }

  /** Lets the pod's network namespace go (the simulator stops); its processes are no longer looked for. */
  unpinNetNamespace(): void {
    if (this.netNsFd !== null) closeSync(this.netNsFd);
    this.netNsFd = null;
    this.netNs = null;
  }

  /** Holds the network namespace of `pid` (the pod's init) open, and names it by its inode. */
  private pinNetNamespace(pid: number): void {
    if (this.netNsFd !== null) return;
    try {
      const fd = openSync(`/proc/${pid}/ns/net`, 'r');
      this.netNsFd = fd;
      this.netNs = `net:[${fstatSync(fd).ino}]`;
    } catch {
      this.netNs = null;
    }
  }

  logs(): string {
    return this.log;
  }

  private async openListeners(): Promise<Map<number, net.Server>> {
    const listeners = new Map<number, net.Server>();
    for (const port of tcpPorts(this.record.spec.ports)) {
      const server = net.createServer((socket) => this.relay(socket, port));
      server.on('error', (error) => this.append(`relay listener for port ${port}: ${error.message}\n`));
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      listeners.set(port, server);
    }
    return listeners;
  }

  private portMappings(listeners: Map<number, net.Server>): PortMapping[] {
    return this.record.spec.ports.flatMap((entry): PortMapping[] => {
      const [portText, type] = entry.split('/');
      const port = Number(portText);
      if (type === 'tcp') {
        const address = listeners.get(port)?.address();
        return [{ private: port, type: 'tcp', public: address && typeof address === 'object' ? address.port : null }];
      }
      return type === 'http' ? [{ private: port, type: 'http', public: null }] : [];
    });
  }

  private containerEnv(ports: PortMapping[]): Record<string, string> {
    const pod = this.record;
    const gpu = this.ctx.config.gpuTypes.find((type) => type.id === pod.gpuTypeId);
    const env: Record<string, string> = { PATH, HOME: '/root', ...pod.spec.env };
    // Runpod's own variables win over the create call's env: a pod cannot be told it is another pod.
    Object.assign(env, {
      RUNPOD_POD_ID: pod.id,
      RUNPOD_POD_HOSTNAME: pod.hostId,
      RUNPOD_API_KEY: pod.podKey,
      RUNPOD_PUBLIC_IP: '127.0.0.1',
      RUNPOD_GPU_COUNT: String(pod.gpuCount),
      RUNPOD_CPU_COUNT: String(8 * pod.gpuCount),
      RUNPOD_MEM_GB: String(Math.max(16, (gpu?.memoryInGb ?? 16)) * pod.gpuCount),
      RUNPOD_DC_ID: pod.dataCenterId,
    });
    // API-NOTES §4.1: the attached network volume.
    const volumeId = mountedVolumeId(pod);
    if (volumeId !== undefined) env.RUNPOD_VOLUME_ID = volumeId;
    for (const port of ports) {
      if (port.type === 'tcp' && port.public !== null) env[`RUNPOD_TCP_PORT_${port.private}`] = String(port.public);
    }
    return env;
  }

  private relay(socket: net.Socket, privatePort: number): void {
    socket.on('error', () => socket.destroy());
    // Nothing listening behind the port (not assigned yet, or sshd not up): refused. A reset is
    // the nearest a listening socket can come to ECONNREFUSED.
    if (this.destroyed || this.initPid === null || !this.container || Date.now() < this.record.reachableAfter
      || !hasListener(this.initPid, privatePort)) {
      socket.resetAndDestroy();
      return;
    }
    const upstream = net.connect(this.inboundSocket(privatePort));
    this.relays.set(upstream, socket);
    upstream.on('error', () => socket.destroy());
    upstream.on('close', () => this.relays.delete(upstream));
    socket.on('close', () => upstream.destroy());
    socket.pipe(upstream);
    const pace = this.record.linkBytesPerSecond;
    (pace === null ? upstream : upstream.pipe(pacedStream(pace))).pipe(socket);
  }

  /** The holder's inbound listener for a private port. */
  private inboundSocket(privatePort: number): string {
    return join(dirname(this.ctx.apiSocket), `in-${this.record.id}-${privatePort}.sock`);
  }

  /** Cuts every open connection (the pod vanished, or its container ended). */
  private killRelays(): void {
    for (const [upstream, socket] of this.relays) {
      upstream.destroy();
      socket.destroy();
    }
  }

  private async relaysGone(): Promise<void> {
    await Promise.all([...this.relays.keys()].filter((upstream) => !upstream.closed).map((upstream) => once(upstream, 'close')));
  }

  private onContainerExit(container: Container, code: number | null, signal: NodeJS.Signals | null): void {
    this.append(`[runpod-sim] container exited (${signal ?? `code ${String(code)}`})\n`);
    if (container.intentional || this.destroyed || this.container !== container) return;
    // Runpod restarts a container whose main process ended, with new port mappings, while billing.
    this.container = null;
    this.record.container = null;
    this.killRelays();
    if (this.lastListeners) closeAll(this.lastListeners);
    this.lastListeners = null;
    this.exitedOnItsOwn = container;
    // Its processes are gone (the launcher exits only then); the restart also waits for its output
    // to be read to the end and its exit narrated, so nothing of it comes after the next one's start.
    void closedOf(container).then(() => {
      if (this.exitedOnItsOwn !== container) return;
      this.restartTimer = setTimeout(() => {
        this.restartTimer = null;
        if (this.exitedOnItsOwn !== container || this.destroyed || this.record.status !== 'RUNNING') return;
        this.record.restarts += 1;
        this.podLog.system(`Restarting container (its main process exited; restart ${this.record.restarts})`);
        void this.startContainer(false);
      }, this.ctx.config.timings.restartDelayMs);
    });
  }

  /**
   * Ends the container as if its main process had exited on its own (not intentional, so the
   * restart follows); resolves once the next container has started, or the pod is no longer RUNNING.
   */
  async exitOnItsOwn(): Promise<void> {
    const container = this.container;
    if (!container || this.destroyed) return;
    await killTree(container);
    await exitOf(container.proc);
    const giveUp = Date.now() + this.ctx.config.timings.restartDelayMs + 10_000;
    while (!this.destroyed && this.record.status === 'RUNNING' && (this.container === null || this.container === container) && Date.now() < giveUp) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  private onHolderExit(): void {
    if (this.destroyed) return;
    this.fail('pod holder exited');
  }

  private fail(message: string): void {
    this.note(message);
    this.record.status = 'ERROR';
    this.record.container = null;
    if (this.container) {
      this.container.intentional = true;
      void killTree(this.container);
    }
  }

  /** The container's own output: the admin log's bytes, and `container` lines. */
  private containerOutput(chunk: Buffer, lines: LineSplitter): void {
    this.append(chunk);
    for (const line of lines.push(chunk)) this.podLog.add('container', line);
  }

  /** The simulator's own word on the pod: in the admin log, and a `system` line. */
  private note(message: string): void {
    this.append(`[runpod-sim] ${message}\n`);
    this.podLog.system(message);
  }

  private append(chunk: Buffer | string): void {
    this.log += chunk.toString();
    const max = this.ctx.config.pods.logBytes;
    if (this.log.length > max) this.log = this.log.slice(this.log.length - max);
  }
}

/**
 * Kills a container: SIGKILL to its PID-namespace init, found below the launcher (nsenter, then
 * unshare); the launcher exits once the init was reaped, i.e. once the whole container is gone.
 * Resolves once the init is killed, or the launcher ended without one.
 */
async function killTree(container: Container): Promise<void> {
  container.killed = true;
  const launcher = container.proc;
  const init = await waitForInit(launcher, 2);
  if (init !== null) tryKill(init);
  else if (isRunning(launcher)) killChild(launcher);
}

/**
 * The init of the PID namespace `launcher` sets up: its `depth`-th descendant, each link the only child
 * of the one before (holder: unshare, then the init; container: nsenter, then unshare, then the init),
 * waited for while the launcher runs. Null if the launcher ended without one, or after `graceMs`.
 * A launcher must not be killed before its init exists: each link arms its parent-death signal only
 * once it runs (setpriv's prctl after nsenter's fork and exec, unshare --kill-child's in its forked
 * child), so a launcher killed between a fork and that prctl leaves the child to run the whole
 * container (or pod) orphaned, where nothing tracks or kills it: under load, a container ended just
 * after its start (ssh.direct is published then) ran on beside the next one.
 */
async function waitForInit(launcher: ChildProcess, depth: number, graceMs = 10_000): Promise<number | null> {
  const giveUp = Date.now() + graceMs;
  while (launcher.pid !== undefined && isRunning(launcher) && Date.now() < giveUp) {
    let pid: number | null = launcher.pid;
    for (let i = 0; i < depth && pid !== null; i++) pid = onlyChild(pid);
    if (pid !== null) return pid;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return null;
}

function closePipe(pipe: OutputPipe): void {
  pipe.closeWriteEnd();
  pipe.reader.destroy();
}

/** Resolves once the container's output is read to the end, or after `graceMs` (a pipe a stray process holds). */
async function closedOf(container: Container, graceMs = 10000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([container.closed, new Promise<void>((resolve) => { timer = setTimeout(resolve, graceMs); })]);
  clearTimeout(timer);
}

function isRunning(proc: ChildProcess): boolean {
  return proc.exitCode === null && proc.signalCode === null;
}

/**
 * Resolves when the child has exited (or never started); SIGKILLs it if the kernel has not let it go
 * within `graceMs`.
 */
async function exitOf(proc: ChildProcess, graceMs = 10000): Promise<void> {
  if (proc.pid === undefined || !isRunning(proc)) return;
  const timer = Number.isFinite(graceMs) ? setTimeout(() => killChild(proc), graceMs) : null;
  await new Promise<void>((resolve) => {
    proc.once('exit', () => resolve());
    proc.once('error', () => resolve());
  });
  if (timer) clearTimeout(timer);
}

/** ChildProcess.kill is a no-op once the child was reaped, so a reused pid is never hit. */
function killChild(proc: ChildProcess): void {
  try {
    proc.kill('SIGKILL');
  } catch {
    // Already gone.
  }
}

function tryKill(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

function closeAll(listeners: Map<number, net.Server>): void {
  for (const server of listeners.values()) server.close();
}

function tcpPorts(ports: readonly string[]): number[] {
  const tcp = ports.flatMap((entry) => {
    const [port, type] = entry.split('/');
    return type === 'tcp' ? [Number(port)] : [];
  });
  return [...new Set(tcp)];
}

/** Passes bytes on no faster than `bytesPerSecond` (slow-link fault), in slices of a tenth of a second. */
function pacedStream(bytesPerSecond: number): Transform {
  const slice = Math.max(1, Math.floor(bytesPerSecond / 10));
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const pieces: Buffer[] = [];
      for (let at = 0; at < chunk.length; at += slice) pieces.push(chunk.subarray(at, at + slice));
      const next = (): void => {
        const piece = pieces.shift();
        if (!piece) return callback();
        this.push(piece);
        setTimeout(next, (piece.length / bytesPerSecond) * 1000).unref();
      };
      next();
    },
  });
}
