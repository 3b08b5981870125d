// One pino logger for the whole process. Secrets are kept out in two ways: known secret-bearing
// fields are redacted by path, and every registered secret value (the Runpod keys above all) is
// scrubbed from every serialized line, whatever field or message it hides in.
import pino, { type Logger } from 'pino';

const secrets = new Set<string>();

/** Registers a secret value so that no log line, error text or event note ever carries it. */
export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 8) secrets.add(value);
}

/** Replaces every registered secret (and any 8+ character fragment of a key in a bearer header) in text. */
export function redact(text: string): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join('[REDACTED]');
  return out.replace(/(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi, '$1[REDACTED]');
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
        streamWrite: (line) => (secrets.size === 0 ? line : redact(line)),
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}

export type { Logger };
