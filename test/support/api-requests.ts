// This process's requests to a Kubernetes API server, by verb and resource ("GET secrets",
// "PATCH runpodruns/status", "GET runpodruns (list)"), from undici's diagnostics channel: what the
// controller (and whatever else runs in the process) costs the API server. Watches are left out:
// each is one long request.
import diagnostics from 'node:diagnostics_channel';

export interface ApiRequestCount {
  /** The counts so far (live). */
  counts: Map<string, number>;
  /** A copy of the counts now. */
  snapshot(): Map<string, number>;
  /** The count of one kind, e.g. 'GET secrets'. */
  of(what: string): number;
  stop(): void;
}

export function watchApiRequests(): ApiRequestCount {
  const counts = new Map<string, number>();
  const onRequest = (message: unknown): void => {
    const { request } = message as { request: { method: string; path: string } };
    const [path = '', query = ''] = request.path.split('?');
    if (!/^\/apis?\//.test(path) || /(^|&)watch=(true|1)(&|$)/.test(query)) return;
    // .../namespaces/<ns>/<resource>[/<name>[/<subresource>]]
    const [, resource, name, sub] = /\/namespaces\/[^/]+\/([^/]+)(?:\/([^/]+))?(?:\/([^/]+))?/.exec(path) ?? [];
    const what = `${request.method} ${resource ?? path}${sub ? `/${sub}` : ''}${name || request.method !== 'GET' ? '' : ' (list)'}`;
    counts.set(what, (counts.get(what) ?? 0) + 1);
  };
  diagnostics.subscribe('undici:request:create', onRequest);
  return {
    counts,
    snapshot: () => new Map(counts),
    of: (what) => counts.get(what) ?? 0,
    stop: () => diagnostics.unsubscribe('undici:request:create', onRequest),
  };
}
