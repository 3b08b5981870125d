// A TCP proxy in front of the test sshd that paces what the server sends (as the simulator's
// slow-link fault paces a pod's output), so a download is slow while the client stays fast.
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { Transform } from 'node:stream';

export interface SlowProxy {
  host: string;
  port: number;
  close(): Promise<void>;
}

export async function startSlowProxy(target: { host: string; port: number }, bytesPerSecond: number): Promise<SlowProxy> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection(target.port, target.host);
    const paced = pacedStream(bytesPerSecond);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      // Either side going ends both: a destroyed client must not leave sshd's side open.
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
        paced.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(paced).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('the slow proxy has no address');
  return {
    host: '127.0.0.1',
    port: address.port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Passes bytes on no faster than `bytesPerSecond`, in slices of a tenth of a second. */
function pacedStream(bytesPerSecond: number): Transform {
  const slice = Math.max(1, Math.floor(bytesPerSecond / 10));
  let timer: NodeJS.Timeout | undefined;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const pieces: Buffer[] = [];
      for (let at = 0; at < chunk.length; at += slice) pieces.push(chunk.subarray(at, at + slice));
      const next = (): void => {
        timer = undefined;
        if (this.destroyed) return;
        const piece = pieces.shift();
        if (!piece) return callback();
        this.push(piece);
        timer = setTimeout(next, (piece.length / bytesPerSecond) * 1000);
      };
      next();
    },
    destroy(err, callback) {
      if (timer) clearTimeout(timer);
      callback(err);
    },
  });
}
