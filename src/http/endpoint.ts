// A small plain-HTTP endpoint for the metrics and the health probes: GET only, fixed routes, no
// bodies read. Bound on controller-runtime's `[host]:port` address form.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BindAddress } from '../config.ts';
import type { Logger } from '../log.ts';

export interface RouteAnswer { status: number; body: string; contentType?: string }
export type Route = (request: IncomingMessage) => RouteAnswer | Promise<RouteAnswer>;

export interface Endpoint {
  /** The address actually bound (the port is known even when 0 was asked for). */
  address: { host: string; port: number };
  close(): Promise<void>;
}

export async function startEndpoint(name: string, bind: BindAddress, routes: Record<string, Route>, logger: Logger): Promise<Endpoint> {
  const log = logger.child({ component: name });
  const server: Server = createServer((request, response) => void answer(request, response));
  async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    const route = routes[path];
    let result: RouteAnswer;
    if (request.method !== 'GET' && request.method !== 'HEAD') result = { status: 405, body: 'method not allowed\n' };
    else if (!route) result = { status: 404, body: 'not found\n' };
    else {
      try {
        result = await route(request);
      } catch (error) {
        log.warn({ err: error, path }, 'endpoint route failed');
        result = { status: 500, body: 'internal error\n' };
      }
    }
    response.writeHead(result.status, { 'content-type': result.contentType ?? 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    response.end(request.method === 'HEAD' ? undefined : result.body);
  }
  // Probes and scrapes are short; an idle keep-alive socket must not hold a shutdown back.
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: bind.port, ...(bind.host ? { host: bind.host } : {}) }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const info = server.address() as AddressInfo;
  const address = { host: info.address, port: info.port };
  log.info({ address: `${info.family === 'IPv6' ? `[${info.address}]` : info.address}:${info.port}` }, `serving ${name}`);
  return {
    address,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

/** `http://host:port` of an endpoint, as a client on this machine reaches it. */
export function endpointUrl(endpoint: Endpoint | undefined): string | undefined {
  if (!endpoint) return undefined;
  const { host, port } = endpoint.address;
  const shown = host === '::' || host === '0.0.0.0' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `http://${shown}:${port}`;
}
