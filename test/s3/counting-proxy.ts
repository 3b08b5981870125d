// An HTTP relay in front of the object store that counts how many requests of each method are in
// flight at once (the Host header goes through unchanged, so SigV4 signatures made for the relay's
// address still verify). Each answer is held back `holdMs`, so requests sent together overlap.
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface CountingProxy {
  endpoint: string;
  port: number;
  /** The most requests of `method` that were in flight at once since the last reset. */
  maxInFlight(method: string): number;
  /** How many requests of `method` came since the last reset. */
  count(method: string): number;
  reset(): void;
  stop(): Promise<void>;
}

export async function startCountingProxy(upstream: string, holdMs = 10): Promise<CountingProxy> {
  const target = new URL(upstream);
  const inFlight = new Map<string, number>();
  const max = new Map<string, number>();
  const counts = new Map<string, number>();
  const relay = (req: IncomingMessage, res: ServerResponse): void => {
    const method = req.method ?? 'GET';
    const now = (inFlight.get(method) ?? 0) + 1;
    inFlight.set(method, now);
    max.set(method, Math.max(max.get(method) ?? 0, now));
    counts.set(method, (counts.get(method) ?? 0) + 1);
    const done = (): void => {
      inFlight.set(method, (inFlight.get(method) ?? 1) - 1);
    };
    // curl asks to continue before a large body: answered here, so the upstream never sees the question.
    const { expect: _expect, ...headers } = req.headers;
    const forward = request({ host: target.hostname, port: target.port, method, path: req.url, headers }, (answer: IncomingMessage) => {
      void sleep(holdMs).then(() => {
        done();
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
    });
    forward.on('error', () => {
      done();
      res.destroy();
    });
    req.pipe(forward);
  };
  const server = createServer(relay);
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    res.writeContinue();
    relay(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`, port,
    maxInFlight: (method) => max.get(method) ?? 0,
    count: (method) => counts.get(method) ?? 0,
    reset: () => {
      max.clear();
      counts.clear();
    },
    stop: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
