// Cursors for GET /v2/pods in pages (config pods.pageSize). A cursor stands for "after this pod" in
// the order pods were created, which never changes (every pod ever created stays in the state), so a
// pod live during a whole walk is on exactly one of its pages: pods created meanwhile come later, and
// a deletion never shifts what follows. Cursors are opaque, per account, and expire (pods.cursorTtlMs).
import { randomBytes } from 'node:crypto';

interface IssuedCursor { accountKey: string; afterPodId: string; expiresAt: number }

export class PodCursors {
  readonly #issued = new Map<string, IssuedCursor>();
  readonly #ttlMs: number;

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  issue(accountKey: string, afterPodId: string, now = Date.now()): string {
    this.#dropExpired(now);
    const cursor = `pc_${randomBytes(12).toString('hex')}`;
    this.#issued.set(cursor, { accountKey, afterPodId, expiresAt: now + this.#ttlMs });
    return cursor;
  }

  /** The pod a cursor continues after; undefined for one never issued to this account, or expired. */
  resolve(accountKey: string, cursor: string, now = Date.now()): string | undefined {
    const issued = this.#issued.get(cursor);
    if (!issued || issued.accountKey !== accountKey || now >= issued.expiresAt) return undefined;
    return issued.afterPodId;
  }

  #dropExpired(now: number): void {
    // Map order is issue order, and every cursor lives equally long: the expired ones come first.
    for (const [cursor, issued] of this.#issued) {
      if (issued.expiresAt > now) return;
      this.#issued.delete(cursor);
    }
  }
}
