// One pino logger for the whole process. Secrets are kept out in two ways: known secret-bearing
// fields are redacted by path, and every registered secret value (the Runpod keys above all) is
// scrubbed from every serialized line, whatever field or message it hides in (redaction.ts).
import pino, { type Logger } from 'pino';
import { SecretSet, currentSecretOwner } from './redaction.ts';

/** Entries the process-wide set holds at most (live runs hold ~15 each, plus their job secrets' lines). */
export const MAX_SECRET_ENTRIES = 100_000;
const BOUND_LOG_INTERVAL_MS = 60_000;
let boundLoggedAt = Number.NEGATIVE_INFINITY;
let droppedSinceLog = 0;

const secrets = new SecretSet({
  maxEntries: MAX_SECRET_ENTRIES,
  onBound: (dropped, size) => {
    droppedSinceLog += dropped;
    if (Date.now() - boundLoggedAt < BOUND_LOG_INTERVAL_MS) return;
    boundLoggedAt = Date.now();
    // No value, only counts: the oldest entries of runs (never the account keys) are no longer redacted.
    createLogger().error({ dropped: droppedSinceLog, size, max: MAX_SECRET_ENTRIES },
      'the redaction set is full: the secrets registered longest ago by runs are no longer redacted; are that many runs live?');
    droppedSinceLog = 0;
  },
});

/**
 * Registers a secret value so that no log line, error text, event note or status message carries it,
 * for `owner` (default: the run whose reconcile this is, else the process; see releaseSecrets).
 */
export function registerSecret(value: string | undefined, owner: string = currentSecretOwner()): void {
  secrets.add(value, owner);
}

/** The owner (a run that ended) no longer needs its secrets: those nobody else registered stop being redacted. */
export function releaseSecrets(owner: string): void {
  secrets.release(owner);
}

/** Entries held: all of them, or those of one owner. */
export function registeredSecrets(owner?: string): number {
  return owner === undefined ? secrets.size : secrets.ownedBy(owner);
}

/** Replaces every registered secret (and any 8+ character fragment of a key in a bearer header) in text. */
export function redact(text: string): string {
  return secrets.redact(text).replace(/(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi, '$1[REDACTED]');
}

const redactedPaths = [
  'apiKey', '*.apiKey', 'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization',
  'privateKey', '*.privateKey', 'token', '*.token', 'password', '*.password',
];

export function createLogger(level: string = process.env.LOG_LEVEL ?? 'info', destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: redactedPaths, censor: '[REDACTED]' },
      formatters: { level: (label) => ({ level: label }) },
      hooks: {
        // Last line of defence: scrub registered secrets from the whole serialized line.
        streamWrite: (line) => redact(line),
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

export type { Logger };
