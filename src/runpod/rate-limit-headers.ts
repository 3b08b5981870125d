// Parsers for the rate-limit headers Runpod v2 sends (IETF httpapi-ratelimit-headers draft, structured
// field lists) and for Retry-After. Malformed input yields nothing rather than an error: a bad header
// must never fail a call that otherwise succeeded.

export interface WindowState {
  name: string;
  /** Requests left in the window. */
  remaining: number;
  /** Milliseconds until the window resets. */
  resetMs: number;
}

export interface WindowPolicy {
  name: string;
  quota: number;
  windowMs: number;
}

interface Member {
  name: string;
  params: Map<string, string>;
}

function splitTopLevel(value: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < value.length; i += 1) {
    const ch = value.charAt(i);
    if (ch === '\\' && quoted) {
      current += ch + value.charAt(i + 1);
      i += 1;
    } else if (ch === '"') {
      quoted = !quoted;
      current += ch;
    } else if (ch === separator && !quoted) {
      parts.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  parts.push(current);
  return parts.map((p) => p.trim()).filter((p) => p.length > 0);
}

function unquote(token: string): string {
  const t = token.trim();
  return t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1).replace(/\\(.)/g, '$1') : t;
}

function parseMembers(header: string | undefined): Member[] {
  if (!header) return [];
  return splitTopLevel(header, ',').map((member) => {
    const [head = '', ...rest] = splitTopLevel(member, ';');
    const params = new Map<string, string>();
    for (const param of rest) {
      const eq = param.indexOf('=');
      if (eq > 0) params.set(param.slice(0, eq).trim().toLowerCase(), unquote(param.slice(eq + 1)));
    }
    return { name: unquote(head), params };
  });
}

function nonNegative(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+(?:\.\d+)?$/.test(value)) return undefined;
  return Number(value);
}

/** `RateLimit: "minute";r=0;t=12, "hour";r=2800;t=1812` */
export function parseRateLimit(header: string | undefined): WindowState[] {
  const out: WindowState[] = [];
  for (const m of parseMembers(header)) {
    const r = nonNegative(m.params.get('r'));
    const t = nonNegative(m.params.get('t'));
    if (r !== undefined && t !== undefined && m.name) out.push({ name: m.name, remaining: Math.floor(r), resetMs: t * 1000 });
  }
  return out;
}

/** `RateLimit-Policy: "minute";q=60;w=60, "hour";q=3000;w=3600` */
export function parseRateLimitPolicy(header: string | undefined): WindowPolicy[] {
  const out: WindowPolicy[] = [];
  for (const m of parseMembers(header)) {
    const q = nonNegative(m.params.get('q'));
    const w = nonNegative(m.params.get('w'));
    if (q !== undefined && w !== undefined && w > 0 && m.name) out.push({ name: m.name, quota: Math.floor(q), windowMs: w * 1000 });
  }
  return out;
}

/** Retry-After as delay-seconds (fractions tolerated) or an HTTP date; undefined when absent or unusable. */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | undefined {
  if (!header) return undefined;
  const text = header.trim();
  const seconds = nonNegative(text);
  if (seconds !== undefined) return Math.ceil(seconds * 1000);
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isFinite(at) ? Math.max(0, at - nowMs) : undefined;
}

/** One header value from a node/undici header record, whatever its shape. */
export function headerValue(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(', ') : v;
}
