// Per-key request quotas with the v2 headers (IETF ratelimit-headers draft, as Runpod sends them).
// Each window starts at the key's first request in it, so tests are never split by a clock boundary.
import type { SimConfig } from './config.ts';

interface WindowPolicy {
  name: string;
  quota: number;
  seconds: number;
}

interface WindowState {
  startedAt: number;
  used: number;
}

export type RateDecision =
  | { allowed: true; headers: Record<string, string> }
  | { allowed: false; headers: Record<string, string>; window: string; retryAfter: number };

export class RateLimiter {
  private readonly policies: WindowPolicy[];
  private readonly enabled: boolean;
  private readonly states = new Map<string, WindowState[]>();
  private readonly policyHeader: string;

  constructor(config: SimConfig['rateLimits']) {
    this.enabled = config.enabled;
    this.policies = [
      { name: 'minute', ...config.minute },
      { name: 'hour', ...config.hour },
    ];
    this.policyHeader = this.policies.map((p) => `"${p.name}";q=${p.quota};w=${p.seconds}`).join(', ');
  }

  /** Counts one request of `key` unless a window is exhausted. Rejected requests do not count. */
  consume(key: string, now = Date.now()): RateDecision {
    if (!this.enabled) return { allowed: true, headers: {} };
    const states = this.windows(key, now);
    const exhausted = this.policies.findIndex((policy, i) => (states[i]?.used ?? 0) >= policy.quota);
    if (exhausted >= 0) {
      const policy = this.policies[exhausted];
      const state = states[exhausted];
      const retryAfter = policy && state ? resetIn(policy, state, now) : 1;
      return { allowed: false, headers: this.headers(states, now), window: policy?.name ?? 'minute', retryAfter };
    }
    for (const state of states) state.used += 1;
    return { allowed: true, headers: this.headers(states, now) };
  }

  /** Headers for a response that an injected fault answered: the quota as it stands. */
  peek(key: string, now = Date.now()): Record<string, string> {
    return this.enabled ? this.headers(this.windows(key, now), now) : {};
  }

  private windows(key: string, now: number): WindowState[] {
    let states = this.states.get(key);
    if (!states) {
      states = this.policies.map(() => ({ startedAt: now, used: 0 }));
      this.states.set(key, states);
    }
    this.policies.forEach((policy, i) => {
      const state = states[i];
      if (state && now >= state.startedAt + policy.seconds * 1000) {
        state.startedAt = now;
        state.used = 0;
      }
    });
    return states;
  }

  private headers(states: WindowState[], now: number): Record<string, string> {
    const live = this.policies
      .map((policy, i) => {
        const state = states[i];
        return state ? `"${policy.name}";r=${Math.max(0, policy.quota - state.used)};t=${resetIn(policy, state, now)}` : '';
      })
      .join(', ');
    return { RateLimit: live, 'RateLimit-Policy': this.policyHeader };
  }
}

function resetIn(policy: WindowPolicy, state: WindowState, now: number): number {
  return Math.max(1, Math.ceil((state.startedAt + policy.seconds * 1000 - now) / 1000));
}
