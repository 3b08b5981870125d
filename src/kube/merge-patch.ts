// JSON merge patch (RFC 7386) between two JSON documents, and the equality it is based on. A merge
// patch replaces arrays whole and deletes a field with null, so: arrays are sent whole, removed fields
// become null, and a null in a desired document means "absent".

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isObject(value: unknown): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The JSON the API server would store: undefined and null members dropped, Dates as strings. */
export function normalize(value: unknown): Json {
  if (value === undefined) return null;
  const json = JSON.parse(JSON.stringify(value)) as Json;
  const strip = (v: Json): Json => {
    if (Array.isArray(v)) return v.map(strip);
    if (!isObject(v)) return v;
    const out: Record<string, Json> = {};
    for (const [k, child] of Object.entries(v)) if (child !== null) out[k] = strip(child);
    return out;
  };
  return strip(json);
}

/** Deep equality of JSON values; object key order does not matter, array order does. */
export function jsonEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i] as Json));
  }
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => k in b && jsonEqual(a[k] as Json, b[k] as Json));
}

/** The smallest merge patch turning `from` into `to` (both normalized). */
export function createMergePatch(from: Json, to: Json): Json {
  if (!isObject(from) || !isObject(to)) return to;
  const patch: Record<string, Json> = {};
  for (const key of Object.keys(from)) if (!(key in to)) patch[key] = null;
  for (const [key, value] of Object.entries(to)) {
    if (!(key in from)) patch[key] = value;
    else if (!jsonEqual(from[key] as Json, value)) patch[key] = createMergePatch(from[key] as Json, value);
  }
  return patch;
}

/** Applies a merge patch (RFC 7386), for tests and for callers that want the expected result. */
export function applyMergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = applyMergePatch(out[key] ?? null, value);
  }
  return out;
}
