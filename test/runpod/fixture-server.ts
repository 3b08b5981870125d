// A local HTTP server on 127.0.0.1 that replays recorded Runpod answers, one scripted reply per
// request, and remembers what it was asked. Transport-level fixture tests only; behaviour tests use
// the simulator.
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/log.ts';

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON (problem+json for errors); a string as is. */
  body?: unknown;
  /** Never answer (the client must time out). */
  hang?: boolean;
}

export interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Handler = (req: Received) => Reply;

export interface FixtureServer {
  baseUrl: string;
  received: Received[];
  /** Replies to send, in order; when empty, `fallback` answers. */
  script: (Reply | Handler)[];
  fallback: Handler;
  stop(): Promise<void>;
}

export async function startFixtureServer(fallback: Handler = () => ({ status: 500, body: { title: 'Internal Server Error', status: 500, detail: 'no scripted reply' } })): Promise<FixtureServer> {
  const received: Received[] = [];
  const hanging = new Set<ServerResponse>();
  const state: FixtureServer = { baseUrl: '', received, script: [], fallback, stop: async () => {} };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rec: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(rec);
      const next = state.script.shift() ?? state.fallback;
      const reply = typeof next === 'function' ? next(rec) : next;
      if (reply.hang) {
        hanging.add(res);
        return;
      }
      const isText = typeof reply.body === 'string';
      const payload = reply.body === undefined ? '' : isText ? (reply.body as string) : JSON.stringify(reply.body);
      const contentType = isText ? 'text/html' : reply.status >= 400 ? 'application/problem+json' : 'application/json';
      res.writeHead(reply.status, { ...(payload ? { 'content-type': contentType } : {}), ...reply.headers });
      res.end(payload);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  state.baseUrl = `http://127.0.0.1:${port}/v2`;
  state.stop = async () => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return state;
}

/** A logger whose every line is kept, to check what reaches the logs. */
export function capturedLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: createLogger('debug', sink), lines };
}
