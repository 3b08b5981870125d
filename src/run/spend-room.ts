// The room an account's spend limit leaves, shared by the runs waiting for it. Every waiting run reads
// the same pod list: when it shows room for one pod, each of them would send its create, one would fit
// and the rest be refused, every few seconds, each refusal followed by two more calls to learn the
// figures (a create storm). A run about to resend claims the room first; while its claim stands, the
// room it took is counted as spent, so the others wait without a call. A refusal says the lists' room
// is not there: none is claimed again before a list taken a while after it. One per account, in
// memory: the leader is the only process that creates.
import type { SpendFacts } from './model.ts';

/** A list taken this long after a claim shows its pod if it was created (list lag, one poll), and counts its cost. */
export const claimVisibleAfterMs = 20_000;

const cents = (value: number): number => Math.round(value * 100);

export class SpendRoom {
  readonly #claims = new Map<string, { usd: number; at: number }>();
  #refusedAt = Number.NEGATIVE_INFINITY;

  /**
   * Claims room for run `uid`'s pod, judged from a pod list taken at `listedAt` and the claims that list
   * cannot show yet; false (nothing claimed) when none is left.
   */
  claim(uid: string, spend: Required<SpendFacts>, listedAt: Date, now: Date): boolean {
    for (const [other, claim] of this.#claims) if (other === uid || listedAt.getTime() >= claim.at + claimVisibleAfterMs) this.#claims.delete(other);
    // Runpod's refusal outweighs a list that may not show every pod yet: its room is believed again only
    // in a list taken long enough after the refusal.
    if (listedAt.getTime() < this.#refusedAt + claimVisibleAfterMs) return false;
    const claimed = [...this.#claims.values()].reduce((sum, claim) => sum + claim.usd, 0);
    if (cents(spend.runningUsdPerHour + claimed + spend.podUsdPerHour) > cents(spend.limitUsdPerHour)) return false;
    this.#claims.set(uid, { usd: spend.podUsdPerHour, at: now.getTime() });
    return true;
  }

  /** The create was refused or failed: nothing of the claim will bill. */
  release(uid: string): void {
    this.#claims.delete(uid);
  }

  /** The create was refused for the spend limit: the room the lists showed is not there. */
  refused(uid: string, at: Date): void {
    this.release(uid);
    this.#refusedAt = Math.max(this.#refusedAt, at.getTime());
  }
}
