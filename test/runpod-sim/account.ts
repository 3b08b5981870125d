// The account-wide rules of the 2026-12 v2 docs (API-NOTES addendum): the spend limit checked when a
// pod starts, GET /v2/account/limits, and the scopes an account key must carry for each call.
import type { ApiKeyScope } from './config.ts';
import type { SimCore } from './core.ts';
import { problem, type Problem } from './problems.ts';
import type { Principal } from './state.ts';

const usd = (value: number): string => `$${value.toFixed(2)}`;
const cents = (value: number): number => Math.round(value * 100);

/**
 * The refusal of a pod start (create or the `start` action) that would bring the account's running
 * pods above its spend rate, or null when it fits. The body is [I]: the docs do not show it; a 400
 * (v2's "rule violation") whose detail names the spend limit and the figures.
 */
export function spendLimitRefusal(core: SimCore, accountKey: string, podCostPerHr: number): Problem | null {
  const limit = core.config.account.spendRateUsdPerHour;
  const running = core.state.runningSpend(accountKey);
  if (cents(running + podCostPerHr) <= cents(limit)) return null;
  return problem(
    400,
    `Spend limit reached: this pod (${usd(podCostPerHr)}/hr) would bring the account's running resources to ` +
      `${usd(running + podCostPerHr)}/hr, above its spend limit of ${usd(limit)}/hr. Contact support to raise it.`,
  );
}

/** GET /v2/account/limits: the shape is [I] (the addendum names spendRate and serverlessWorkers). */
export function accountLimits(core: SimCore): { spendRate: number; serverlessWorkers: number } {
  return { spendRate: core.config.account.spendRateUsdPerHour, serverlessWorkers: core.config.account.serverlessWorkers };
}

/**
 * The scope a call needs ([I] names): reads and writes of pods, of network volumes and of registry
 * credentials, the account's limits; the catalog needs none.
 */
export function requiredScope(method: string, template: string): ApiKeyScope | null {
  if (template === '/v2/account/limits') return 'account:read';
  const kind = (['pods', 'network-volumes', 'registries'] as const).find((name) => template.startsWith(`/v2/${name}`));
  if (kind === undefined) return null;
  return `${kind}:${method === 'GET' ? 'read' : 'write'}`;
}

/** The 403 a valid account key gets for a call its scopes do not cover, or null. Pod keys have their own rules. */
export function scopeRefusal(principal: Principal, method: string, template: string): Problem | null {
  if (principal.kind !== 'account') return null;
  const scope = requiredScope(method, template);
  if (scope === null || principal.scopes.has(scope)) return null;
  return problem(403, `API key is missing the required scope ${scope} for ${method} ${template}`);
}
