// The image's ENTRYPOINT, read from the Dockerfile: a controller process a test or bench starts runs
// with the same Node flags as a deployed one (its memory figures are the deployment's).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const dockerfile = join(import.meta.dirname, '..', '..', 'Dockerfile');

export interface ImageEntrypoint {
  /** The program, `node`. */
  program: string;
  /** Node's own flags, before the script. */
  nodeFlags: string[];
  /** The script, relative to the image's working directory (the repository's root). */
  script: string;
}

export function imageEntrypoint(): ImageEntrypoint {
  const line = readFileSync(dockerfile, 'utf8').split('\n').map((text) => text.trim()).find((text) => text.startsWith('ENTRYPOINT '));
  if (!line) throw new Error(`${dockerfile} has no ENTRYPOINT`);
  const [program = '', ...rest] = JSON.parse(line.slice('ENTRYPOINT '.length)) as string[];
  const at = rest.findIndex((arg) => !arg.startsWith('-'));
  if (at < 0) throw new Error(`the ENTRYPOINT of ${dockerfile} names no script: ${line}`);
  return { program, nodeFlags: rest.slice(0, at), script: rest[at]! };
}
