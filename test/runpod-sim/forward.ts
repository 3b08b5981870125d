// Forwards from inside every pod to loopback services of this machine (config `network.forward`), as
// real pods reach the internet: a pod's 127.0.0.1:<podPort> is a socat in the pod's network namespace
// (started by the holder) that connects to a Unix socket here; this side pipes each connection to
// 127.0.0.1:<hostPort>. Unix sockets are reached through the file system, which the pods share with
// the machine, so no network namespace is crossed by anything but that one path.
import net from 'node:net';
import { once } from 'node:events';
import type { SimConfig } from './config.ts';

export interface PodForward {
  podPort: number;
  /** The Unix socket the pod's relay for `podPort` connects to. */
  socket: string;
}

export interface ForwardServers {
  forwards: PodForward[];
  close(): Promise<void>;
}

/** Listens on one Unix socket per `network.forward` entry in `socketDir`. */
export async function startForwards(config: SimConfig, socketDir: string): Promise<ForwardServers> {
  const servers: net.Server[] = [];
  const open = new Set<net.Socket>();
  const close = async (): Promise<void> => {
    for (const socket of open) socket.destroy();
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  };
  const forwards: PodForward[] = [];
  try {
    for (const { podPort, hostPort } of config.network.forward) {
      const socket = `${socketDir}/forward-${podPort}.sock`;
      const server = net.createServer((inbound) => pipeTo(inbound, hostPort, open));
      servers.push(server);
      server.listen(socket);
      await once(server, 'listening');
      forwards.push({ podPort, socket });
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { forwards, close };
}

/** One connection from a pod: piped both ways to 127.0.0.1:hostPort; a refusal there ends it. */
function pipeTo(inbound: net.Socket, hostPort: number, open: Set<net.Socket>): void {
  const outbound = net.connect(hostPort, '127.0.0.1');
  for (const socket of [inbound, outbound]) {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => {
      inbound.destroy();
      outbound.destroy();
    });
  }
  inbound.pipe(outbound);
  outbound.pipe(inbound);
}

/** Holder arguments: one `<podPort>=<socket>` word per forward. */
export function forwardWords(forwards: readonly PodForward[]): string[] {
  return forwards.map(({ podPort, socket }) => `${podPort}=${socket}`);
}
