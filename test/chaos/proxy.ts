// A pass-through HTTP proxy between the controller and the simulator. It lets the suite stop an
// exchange at an exact point (a create held before Runpod sees it, a create answered but the answer
// never delivered, a delete in flight) and kill the controller right there. Pods call the simulator
// directly; only the controller's own calls pass through here.
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { once } from 'node:events';

export interface Exchange { method: string; path: string; body: Buffer }
export interface Answer { status: number; headers: IncomingHttpHeaders; body: Buffer }
/** Decides an exchange: forward() sends it on; return the answer to deliver, or 'drop' (the connection is cut). */
export type Handler = (exchange: Exchange, forward: () => Promise<Answer>) => Promise<Answer | 'drop'>;

export interface RunningProxy { url: string; stop(): Promise<void> }

const hopByHop = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host']);

export async function startProxy(upstream: { host: string; port: number }, handler: Handler): Promise<RunningProxy> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const exchange: Exchange = { method: req.method ?? 'GET', path: req.url ?? '/', body: Buffer.concat(chunks) };
      // A client that hangs up (its timeout) ends the upstream request too, as a cut connection would.
      const gone = new AbortController();
      res.on('close', () => { if (!res.writableFinished) gone.abort(); });
      const forward = () => new Promise<Answer>((resolve, reject) => {
        const headers = Object.fromEntries(Object.entries(req.headers).filter(([name]) => !hopByHop.has(name)));
        const out = request({
          host: upstream.host, port: upstream.port, method: exchange.method, path: exchange.path, signal: gone.signal,
          headers: { ...headers, 'content-length': String(exchange.body.length) },
        }, (answer) => {
          const body: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => body.push(chunk));
          answer.on('end', () => resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: Buffer.concat(body) }));
          answer.on('error', reject);
        });
        out.on('error', reject);
        out.end(exchange.body);
      });
      handler(exchange, forward).then((answer) => {
        if (answer === 'drop') { req.socket.destroy(); return; }
        const headers = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !hopByHop.has(name)));
        res.writeHead(answer.status, { ...headers, 'content-length': String(answer.body.length) }).end(answer.body);
      }, () => { req.socket.destroy(); });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = address !== null && typeof address === 'object' ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/v2`,
    stop: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
