// A real pino logger whose JSON lines are kept for assertions.
import { createLogger, type Logger } from '../../src/log.ts';

export interface CapturedLine {
  level: string;
  msg?: string;
  [field: string]: unknown;
}

export function captureLogger(level = 'debug'): { log: Logger; lines: CapturedLine[] } {
  const lines: CapturedLine[] = [];
  const log = createLogger(level, { write: (s: string) => void lines.push(JSON.parse(s) as CapturedLine) });
  return { log, lines };
}
