// RFC 9457 problem bodies as REST v2 sends them. The texts are the measured ones (API-NOTES §3), so a
// client's error classification is exercised against what the live service says.
import type { z } from 'zod';

export interface Problem {
  status: number;
  title: string;
  detail: string;
  errors?: string[];
  headers?: Record<string, string>;
}

const titles: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

export function problem(status: number, detail: string, extra: Partial<Problem> = {}): Problem {
  return { status, title: titles[status] ?? 'Error', detail, ...extra };
}

export const CAPACITY_DETAIL =
  'There are no longer any instances available with the requested specifications. Please refresh and try again.';

export const problems = {
  missingKey: () => problem(401, 'missing bearer token'),
  invalidKey: () => problem(401, 'invalid bearer token'),
  forbidden: () => problem(403, 'access denied'),
  notFound: () => problem(404, 'resource not found'),
  capacity: () => problem(400, CAPACITY_DETAIL),
  validation: (errors: string[]) => problem(422, 'Request validation failed.', { errors }),
  rateLimited: (window: string, retryAfter: number) =>
    problem(429, `rate limit exceeded for the ${window} window`, { headers: { 'Retry-After': String(retryAfter) } }),
  internal: (status = 500) => problem(status, status === 500 ? 'Something went wrong.' : 'upstream unavailable'),
};

/** Renders zod issues the way v2's JSON-schema validator words them: `$.path: reason`. */
export function validationErrors(issues: readonly z.core.$ZodIssue[], input: unknown): string[] {
  return issues.flatMap((issue) => {
    const path = jsonPath(issue.path);
    switch (issue.code) {
      case 'unrecognized_keys':
        return issue.keys.map((key) => `${path}: additional properties '${key}' not allowed`);
      case 'invalid_value':
        return [`${path}: value must be one of ${issue.values.map((v) => `'${String(v)}'`).join(', ')}`];
      case 'invalid_type': {
        if (valueAt(input, issue.path) === undefined && issue.path.length > 0) {
          return [`${jsonPath(issue.path.slice(0, -1))}: missing property '${String(issue.path.at(-1))}'`];
        }
        return [`${path}: got ${typeName(valueAt(input, issue.path))}, want ${issue.expected}`];
      }
      case 'too_small':
        return [`${path}: ${issue.origin === 'string' ? 'minLength' : issue.origin === 'array' ? 'minItems' : 'minimum'}: want ${String(issue.minimum)}`];
      case 'too_big':
        return [`${path}: ${issue.origin === 'string' ? 'maxLength' : issue.origin === 'array' ? 'maxItems' : 'maximum'}: want ${String(issue.maximum)}`];
      case 'invalid_format':
        return [`${path}: does not match pattern ${issue.pattern ?? issue.format}`];
      default:
        return [`${path}: ${issue.message}`];
    }
  });
}

function jsonPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, part) => (typeof part === 'number' ? `${out}[${part}]` : `${out}.${String(part)}`), '$');
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const part of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[part];
  }
  return value;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}
