// Runpod error bodies can echo what we sent (a header, the key, or part of it after truncation).
// Exact-match redaction is not enough for that, so any run of 12+ characters taken from a registered
// key is scrubbed too, along with anything shaped like a Runpod key.
import { redact as redactRegistered, registerSecret } from '../log.ts';
import { PROCESS_OWNER } from '../redaction.ts';

const MIN_FRAGMENT = 12;
const keys = new Set<string>();

/** Registers an API key: exact and partial echoes of it are removed from every Runpod error text. */
export function registerApiKey(key: string): void {
  // The account's client outlives any one run of it: the process holds its key.
  registerSecret(key, PROCESS_OWNER);
  if (key.length >= 8) keys.add(key);
}

const keyShaped = /\b(?:rpa|rps|rpk)_[A-Za-z0-9]{8,}/g;

function scrubFragments(text: string, key: string): string {
  if (key.length < MIN_FRAGMENT) return text.split(key).join('[REDACTED]');
  let out = '';
  let pos = 0;
  while (pos < text.length) {
    let end = pos + MIN_FRAGMENT;
    if (end <= text.length && key.includes(text.slice(pos, end))) {
      while (end < text.length && key.includes(text.slice(pos, end + 1))) end += 1;
      out += '[REDACTED]';
      pos = end;
    } else {
      out += text.charAt(pos);
      pos += 1;
    }
  }
  return out;
}

export function redactText(text: string): string {
  let out = redactRegistered(text);
  for (const key of keys) out = scrubFragments(out, key);
  return out.replace(keyShaped, '[REDACTED]');
}
