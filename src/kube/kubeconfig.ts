// A KubeConfig whose API calls share their connections. client-node 2.0.1 makes a new undici Agent
// in every applySecurityAuthentication, that is for every API call and every watch: each call paid a
// TLS handshake and a new SecureContext (its CA parsed again) on both sides, and left its socket idle
// in an agent nobody used again. client-go keeps one transport per config; so does this, per cluster
// and user, as client-node's own agent cache for https.Agent does (getAgentCacheKey).
import { KubeConfig, type RequestContext } from '@kubernetes/client-node';
import type { Dispatcher } from 'undici';

export class PooledKubeConfig extends KubeConfig {
  readonly #dispatchers = new Map<string, Dispatcher>();

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    // The headers (a token, refreshed by the auth provider) stay per call; only the connection pool is shared.
    const made = context.getDispatcher();
    if (made === undefined) return;
    const cluster = this.getCurrentCluster();
    const key = JSON.stringify([cluster?.name, cluster?.server, this.getCurrentUser()?.name]);
    const kept = this.#dispatchers.get(key);
    if (kept === undefined) {
      this.#dispatchers.set(key, made);
      return;
    }
    context.setDispatcher(kept);
    // The one just made never connected: closing it frees nothing but its listeners.
    void made.close();
  }

  /** Closes the shared connections (a process that ends need not). */
  async close(): Promise<void> {
    const dispatchers = [...this.#dispatchers.values()];
    this.#dispatchers.clear();
    await Promise.all(dispatchers.map((d) => d.close()));
  }
}
