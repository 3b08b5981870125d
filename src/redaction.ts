// The secret values no log line, event, status message or error text may carry, and the matcher that
// removes them. Each value is held for its owners: a run (what its reconcile registered: its Runpod
// key, SSH keys, job secrets, S3 keys) or the process (account keys every run of the account shares).
// A run's entries go when the run ends, so the set holds what live runs use, not every run ever seen.
//
// A multi-line value (a private key, a config file with a token on one line) is registered whole and
// line by line: a failing job that prints one line of it must not put that line in an event. Every
// form is registered as written and as JSON escapes it, since log lines are JSON.
//
// Matching is a map lookup or two per position of the text (redaction-index.ts), so a line costs about
// the same against ten entries or a hundred thousand. Every occurrence of every entry is covered,
// overlapping ones merged into one [REDACTED].
import { AsyncLocalStorage } from 'node:async_hooks';
import { EntryIndex, KEY } from './redaction-index.ts';

export const REDACTED = '[REDACTED]';
/** Shorter values are not worth redacting (and would scrub ordinary words); the index needs KEY characters. */
const MIN_SECRET_LENGTH = KEY;
/** A line of a multi-line value is redacted on its own from this length on. */
const MIN_LINE_LENGTH = 12;
/** Lines of one value registered at most (a huge file must not crowd out everything else). */
const MAX_LINES_PER_VALUE = 4096;
export const PROCESS_OWNER = 'process';

const ARMOR = /^-----(BEGIN|END) [A-Z0-9 ]+-----$/;

export interface SecretSetOptions {
  /** Entries held at most; at the bound the entries registered (or renewed) longest ago go first, never the process's. */
  maxEntries?: number;
  /** Told each time entries were dropped at the bound (how many, the size): the caller logs it. */
  onBound?: (dropped: number, size: number) => void;
}

/** The forms of a value that are registered: itself, its lines worth redacting, and each one's JSON-escaped text. */
function secretForms(value: string): string[] {
  const forms = new Set<string>();
  const add = (form: string): void => {
    if (form.length < MIN_SECRET_LENGTH) return;
    forms.add(form);
    const escaped = JSON.stringify(form).slice(1, -1);
    if (escaped !== form) forms.add(escaped);
  };
  add(value);
  if (/[\r\n]/.test(value)) {
    let lines = 0;
    for (const raw of value.split(/\r?\n|\r/)) {
      const line = raw.trim();
      if (line.length < MIN_LINE_LENGTH || ARMOR.test(line)) continue;
      if (++lines > MAX_LINES_PER_VALUE) break;
      add(line);
    }
  }
  return [...forms];
}

export class SecretSet {
  /** Entry → its owners; Map order is registration order (a renewal moves an entry to the end). */
  readonly #owners = new Map<string, Set<string>>();
  readonly #byOwner = new Map<string, Set<string>>();
  readonly #index = new EntryIndex();
  readonly #maxEntries: number;
  readonly #onBound: ((dropped: number, size: number) => void) | undefined;

  constructor(options: SecretSetOptions = {}) {
    this.#maxEntries = options.maxEntries ?? 100_000;
    this.#onBound = options.onBound;
  }

  get size(): number {
    return this.#owners.size;
  }

  /** How many entries `owner` holds (tests, metrics). */
  ownedBy(owner: string): number {
    return this.#byOwner.get(owner)?.size ?? 0;
  }

  add(value: string | undefined, owner: string): void {
    if (!value || value.length < MIN_SECRET_LENGTH) return;
    let owned = this.#byOwner.get(owner);
    if (!owned) this.#byOwner.set(owner, (owned = new Set()));
    for (const form of secretForms(value)) {
      const owners = this.#owners.get(form);
      if (owners) {
        // Renewed: moves to the end, away from the bound's side.
        this.#owners.delete(form);
        this.#owners.set(form, owners);
      } else {
        this.#owners.set(form, new Set());
        this.#index.add(form);
      }
      this.#owners.get(form)?.add(owner);
      owned.add(form);
    }
    this.#bound();
  }

  /** Drops `owner`'s hold on its entries; an entry nobody else holds is no longer redacted. */
  release(owner: string): void {
    const owned = this.#byOwner.get(owner);
    if (!owned) return;
    this.#byOwner.delete(owner);
    for (const form of owned) {
      const owners = this.#owners.get(form);
      owners?.delete(owner);
      if (owners?.size === 0) this.#remove(form);
    }
  }

  redact(text: string): string {
    if (this.#owners.size === 0 || text.length < MIN_SECRET_LENGTH) return text;
    // Covered ranges, found left to right; merged as they come (starts only grow).
    const ranges: [number, number][] = [];
    for (let i = 0; i + MIN_SECRET_LENGTH <= text.length; i++) {
      const longest = this.#index.longestAt(text, i);
      if (longest === 0) continue;
      const end = i + longest;
      const last = ranges.at(-1);
      if (last && i <= last[1]) last[1] = Math.max(last[1], end);
      else ranges.push([i, end]);
    }
    if (ranges.length === 0) return text;
    let out = '';
    let at = 0;
    for (const [start, end] of ranges) {
      out += text.slice(at, start) + REDACTED;
      at = end;
    }
    return out + text.slice(at);
  }

  #remove(form: string): void {
    this.#owners.delete(form);
    this.#index.remove(form);
  }

  #bound(): void {
    if (this.#owners.size <= this.#maxEntries) return;
    let dropped = 0;
    for (const [form, owners] of this.#owners) {
      if (this.#owners.size <= this.#maxEntries) break;
      if (owners.has(PROCESS_OWNER)) continue;
      for (const owner of owners) this.#byOwner.get(owner)?.delete(form);
      this.#remove(form);
      dropped++;
    }
    if (dropped > 0) this.#onBound?.(dropped, this.#owners.size);
  }
}

const scope = new AsyncLocalStorage<string>();

/** Runs `body` with `owner` (a run's UID) as the owner of every secret registered without one inside it. */
export function withSecretOwner<T>(owner: string, body: () => T): T {
  return scope.run(owner, body);
}

/** The owner a registration without one gets: the run whose reconcile (or transfer) this is, else the process. */
export function currentSecretOwner(): string {
  return scope.getStore() ?? PROCESS_OWNER;
}
