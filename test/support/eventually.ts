// The one way a test waits, with one set of timeouts (as Kueue's test/util/constants.go): `eventually`
// polls until something holds and hands back what it found; `consistently` fails the moment something
// stops holding within a span. A timeout is a bound for what load makes slow (a pod booting beside
// twenty others), never a claim about speed: speed is measured by `npm run bench`.
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How long `eventually` waits by default, for what load makes slow (a pod's boot, its verdicts, a
 * deletion): the simulator answers from the test's own process, which shares two cores with the whole
 * suite, and a first answer has taken 26 s under make test. Long enough that load fails no test; a
 * real hang still does.
 */
export const EVENTUALLY_MS = 60_000;
/**
 * How often it looks by default: four times a second. A look is a request to the simulator or the API
 * server (or a process); at 50 ms the waiting itself was some 8 % of an e2e file's CPU, on two cores
 * shared by the whole suite. What a test waits for takes seconds, not tenths.
 */
export const POLL_MS = 250;

/** Not found yet: `undefined`, `null` or `false`. */
type NotYet = undefined | null | false;

/**
 * Polls `probe` every `everyMs` until it returns something other than undefined, null or false, and
 * returns that; fails naming `what` after `timeoutMs`. `pause` waits between looks (a watch may end it
 * sooner: see run-changes.ts).
 */
export async function eventually<T>(
  what: string,
  probe: () => T | NotYet | Promise<T | NotYet>,
  timeoutMs = EVENTUALLY_MS,
  everyMs = POLL_MS,
  pause: (ms: number) => Promise<unknown> = sleep,
): Promise<Exclude<T, NotYet>> {
  const giveUp = Date.now() + timeoutMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined && found !== null && found !== false) return found as Exclude<T, NotYet>;
    if (Date.now() > giveUp) throw new Error(`gave up waiting for ${what} (${timeoutMs} ms)`);
    await pause(everyMs);
  }
}

/** Checks `holds` every `everyMs` for `forMs`; fails naming `what` the first time it does not hold. */
export async function consistently(what: string, holds: () => boolean | Promise<boolean>, forMs: number, everyMs = POLL_MS): Promise<void> {
  const until = Date.now() + forMs;
  do {
    if (!(await holds())) throw new Error(`${what} stopped holding`);
    await sleep(everyMs);
  } while (Date.now() < until);
}
