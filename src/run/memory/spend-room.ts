// The room an account's spend limit leaves, shared by the runs waiting for it. Every waiting run reads
// the same pod list: when it shows room for one pod, each of them would send its create, one would fit
// and the rest be refused, every few seconds, each refusal followed by two more calls to learn the
// figures (a create storm). A run about to send claims the room first; while its claim stands, the
// room it took is counted as spent, so the others wait without a call. A refusal says the lists' room
// is not there: none is claimed again before a list taken a while after it. The figures a refusal
// teaches (the account's limit, the refused pod's price) are the account's, so every run of the same
// pod price is judged by them, for a few minutes (the limit may be raised). A run whose figures are unknown (every run after a restart, until one
// is refused again: they live in memory) claims blind: alone, as a probe, so that a restart or a queue
// of new runs sends one create, not one per run. One per account: the leader is the only process that creates.
import type { SpendClaim, SpendFacts } from '../decide/model.ts';

export type { SpendClaim };
import { claimVisibleAfterMs, figuresFreshForMs, limitedForMs } from '../decide/timings.ts';

interface Learned { usd: number; at: number }


const cents = (value: number): number => Math.round(value * 100);

/** Pods of one key cost the same: the GPU type, the cloud and the GPU count. */
export const spendPriceKey = (gpuType: string, spec: { cloud: string; gpu: { count: number } }): string => `${spec.cloud}/${spec.gpu.count}x${gpuType}`;

export class SpendRoom {
  readonly #claims = new Map<string, { usd: number; at: number }>();
  #refusedAt = Number.NEGATIVE_INFINITY;
  #limit: Learned | undefined;
  readonly #prices = new Map<string, Learned>();

  /**
   * Whether Runpod refused a create of this account under its spend limit lately: while runs wait for
   * room, their resends keep this true; once none is refused, new runs' creates go ungated again.
   */
  limited(now: Date): boolean {
    return now.getTime() < this.#refusedAt + limitedForMs;
  }

  /**
   * Claims room for run `uid`'s pod, judged from a pod list taken at `listedAt` (none yet: undefined)
   * and the claims that list cannot show yet.
   */
  claim(uid: string, spend: SpendFacts, listedAt: Date | undefined, now: Date): SpendClaim {
    const listed = listedAt?.getTime() ?? Number.NEGATIVE_INFINITY;
    for (const [other, claim] of this.#claims) if (other === uid || listed >= claim.at + claimVisibleAfterMs) this.#claims.delete(other);
    // Runpod's refusal outweighs a list that may not show every pod yet: its room is believed again only
    // in a list taken long enough after the refusal.
    if (listed < this.#refusedAt + claimVisibleAfterMs) return 'refused-lately';
    const { limitUsdPerHour, runningUsdPerHour, podUsdPerHour } = spend;
    if (limitUsdPerHour === undefined || runningUsdPerHour === undefined || podUsdPerHour === undefined) {
      // A blind claim may take any room: it goes alone, and nothing goes beside it.
      if (this.#claims.size > 0) return 'claimed';
      this.#claims.set(uid, { usd: Number.POSITIVE_INFINITY, at: now.getTime() });
      return 'granted';
    }
    const claimed = [...this.#claims.values()].reduce((sum, claim) => sum + claim.usd, 0);
    if (cents(runningUsdPerHour + claimed + podUsdPerHour) > cents(limitUsdPerHour)) return claimed > 0 ? 'claimed' : 'no-room';
    this.#claims.set(uid, { usd: podUsdPerHour, at: now.getTime() });
    return 'granted';
  }

  /** The create was refused or failed: nothing of the claim will bill. */
  release(uid: string): void {
    this.#claims.delete(uid);
  }

  /**
   * The create was refused for the spend limit: the room the lists showed is not there. `learned`: the
   * figures read after the refusal, as far as known.
   */
  refused(uid: string, at: Date, priceKey: string, learned: SpendFacts): void {
    this.release(uid);
    this.#refusedAt = Math.max(this.#refusedAt, at.getTime());
    if (learned.limitUsdPerHour !== undefined) this.#limit = { usd: learned.limitUsdPerHour, at: at.getTime() };
    if (learned.podUsdPerHour !== undefined) this.#prices.set(priceKey, { usd: learned.podUsdPerHour, at: at.getTime() });
  }

  /** The account's limit and the price of a pod of `priceKey`, as the refusals lately taught them (either may be unknown). */
  known(priceKey: string, now: Date): SpendFacts {
    const fresh = (figure: Learned | undefined): number | undefined => (figure && now.getTime() < figure.at + figuresFreshForMs ? figure.usd : undefined);
    const limit = fresh(this.#limit);
    const price = fresh(this.#prices.get(priceKey));
    return { ...(limit === undefined ? {} : { limitUsdPerHour: limit }), ...(price === undefined ? {} : { podUsdPerHour: price }) };
  }
}
