// Small HTTP plumbing shared by the v2 API and the admin API: routes by path template, replies, bodies.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Problem } from './problems.ts';

export type Reply =
  | { kind: 'json'; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'text'; status: number; body: string }
  | { kind: 'empty'; status: number }
  | { kind: 'problem'; problem: Problem }
  /** No answer at all until the client gives up (create-timeout fault). */
  | { kind: 'hold' }
  /** A body written over time (server-sent events): `open` writes the head and keeps the response. */
  | { kind: 'stream'; status: number; open: (res: ServerResponse) => void };

export const json = (status: number, body: unknown): Reply => ({ kind: 'json', status, body });
export const empty = (status = 204): Reply => ({ kind: 'empty', status });
export const fail = (problem: Problem): Reply => ({ kind: 'problem', problem });

export function replyStatus(reply: Reply): number {
  if (reply.kind === 'problem') return reply.problem.status;
  return reply.kind === 'hold' ? 0 : reply.status;
}

export interface Route<H> {
  method: string;
  template: string;
  handler: H;
}

interface CompiledRoute<H> extends Route<H> {
  pattern: RegExp;
}

export interface Match<H> {
  template: string;
  route: CompiledRoute<H> | null;
  params: string[];
  /** Methods the path accepts, for a 405's Allow header. */
  allowed: string[];
}

export class Router<H> {
  private readonly routes: CompiledRoute<H>[];

  constructor(routes: Route<H>[]) {
    this.routes = routes.map((route) => ({
      ...route,
      pattern: new RegExp(`^${route.template.replace(/\{[a-zA-Z]+\}/g, '([^/]+)')}$`),
    }));
  }

  match(method: string, pathname: string): Match<H> {
    const byPath = this.routes.filter((route) => route.pattern.test(pathname));
    const first = byPath[0];
    if (!first) return { template: '(unknown)', route: null, params: [], allowed: [] };
    const route = byPath.find((candidate) => candidate.method === method) ?? null;
    const exec = (route ?? first).pattern.exec(pathname);
    const params = exec ? exec.slice(1).map((part) => decodeURIComponent(part)) : [];
    return { template: first.template, route, params, allowed: byPath.map((candidate) => candidate.method) };
  }
}

const MAX_BODY = 1 << 20;

export type BodyResult = { ok: true; value: unknown } | { ok: false; status: 400 | 413; detail: string };

export async function readJsonBody(req: IncomingMessage): Promise<BodyResult> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) return { ok: false, status: 413, detail: 'request body too large' };
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return { ok: false, status: 400, detail: 'request body is required' };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, status: 400, detail: 'request body is not valid JSON' };
  }
}

export function writeReply(res: ServerResponse, reply: Reply, headers: Record<string, string>): void {
  if (reply.kind === 'hold' || res.destroyed || res.writableEnded) return;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  switch (reply.kind) {
    case 'json': {
      for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
      res.writeHead(reply.status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(reply.body));
      return;
    }
    case 'text':
      res.writeHead(reply.status, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(reply.body);
      return;
    case 'empty':
      res.writeHead(reply.status);
      res.end();
      return;
    case 'stream':
      reply.open(res);
      return;
    case 'problem': {
      const { headers: extra, ...body } = reply.problem;
      for (const [name, value] of Object.entries(extra ?? {})) res.setHeader(name, value);
      res.writeHead(body.status, { 'Content-Type': 'application/problem+json' });
      res.end(JSON.stringify(body));
      return;
    }
  }
}
