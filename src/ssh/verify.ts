// Checks a local copy of a results directory against the pod's manifest by reading what is on
// disk now, independently of how it got there; a file the caller hashed as it wrote it (and renamed
// into place only once it matched: transfer.ts) is checked by type and size, its bytes not read again.
//
//   missing:   listed in the manifest, but no regular file (or symlink, for a listed link) at that path locally
//   different: present locally, but its size or SHA-256 differs (or it is not a regular file); for a
//              listed link, not a symlink or one with another target
//   extra:     a non-directory entry under localDir that the manifest does not list
// Directories carry no information of their own: an empty local directory is not "extra".
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { validateManifest, type Manifest } from './manifest.ts';

export interface VerifyResult {
  ok: boolean;
  missing: string[];
  different: string[];
  extra: string[];
}

export async function verifyAgainstManifest(manifest: Manifest, localDir: string, hashed: ReadonlySet<string> = new Set()): Promise<VerifyResult> {
  const { files, links = [] } = validateManifest(manifest);
  const missing: string[] = [];
  const different: string[] = [];
  for (const link of links) {
    const local = localPathFor(localDir, link.path);
    const stats = await lstat(local).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
      throw err;
    });
    if (!stats) missing.push(link.path);
    else if (!stats.isSymbolicLink() || (await readlink(local)) !== link.target) different.push(link.path);
  }
  for (const file of files) {
    const local = localPathFor(localDir, file.path);
    const stats = await lstat(local).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
      throw err;
    });
    if (!stats) missing.push(file.path);
    else if (!stats.isFile() || stats.size !== file.size || (!hashed.has(file.path) && (await sha256File(local)) !== file.sha256)) different.push(file.path);
  }
  const listed = new Set([...files, ...links].map((file) => file.path));
  const extra = (await listLocalEntries(localDir)).filter((path) => !listed.has(path));
  const sorted = (list: string[]): string[] => list.sort();
  return {
    ok: missing.length === 0 && different.length === 0 && extra.length === 0,
    missing: sorted(missing),
    different: sorted(different),
    extra: sorted(extra),
  };
}

/** The local path of a validated manifest path (its '/' separators mapped to the platform's). */
export function localPathFor(localDir: string, manifestPath: string): string {
  return join(localDir, ...manifestPath.split('/'));
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Every non-directory entry under `dir`, relative and '/'-separated; symlinks are not followed. */
export async function listLocalEntries(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (absolute: string, relative: string): Promise<void> => {
    const entries = await readdir(absolute, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' && relative === '') return [];
      throw err;
    });
    for (const entry of entries) {
      const rel = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(join(absolute, entry.name), rel);
      else out.push(rel);
    }
  };
  await walk(dir, '');
  return out;
}
