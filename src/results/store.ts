// The result store on the controller's disk: `<results-dir>/<namespace>/<name>/<uid>/`. Files land in
// a temporary directory beside it and the directory is renamed into place only once every file is
// verified, so a reader never sees a partial result.
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';

export function resultLocation(resultsDir: string, namespace: string, name: string, uid: string): string {
  return resolve(resultsDir, namespace, name, uid);
}

/** A fresh empty directory beside the final location, for one retrieval try. */
export async function stagingDirectory(location: string): Promise<string> {
  const staging = `${location}${stagingSuffix}${randomBytes(4).toString('hex')}`;
  await mkdir(staging, { recursive: true });
  return staging;
}

/** Moves a verified staging directory into place (replacing what an earlier verified try left). */
export async function commitResults(staging: string, location: string): Promise<void> {
  await rm(location, { recursive: true, force: true });
  await rename(staging, location);
}

const stagingSuffix = '.partial-';
const stagingName = /\.partial-[0-9a-f]{8}$/;

/**
 * Removes the staging directories an interrupted retrieval left behind (a crash, SIGKILL): each sits
 * at `<results-dir>/<namespace>/<name>/<uid>.partial-<hex>`. Call it only while no retrieval of this
 * store runs (the new leader, before its workers start). Returns what it removed.
 */
export async function removeAbandonedStaging(resultsDir: string): Promise<string[]> {
  const removed: string[] = [];
  const entries = async (dir: string): Promise<string[]> => {
    try {
      return (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  };
  for (const namespace of await entries(resolve(resultsDir))) {
    for (const name of await entries(resolve(resultsDir, namespace))) {
      for (const entry of await entries(resolve(resultsDir, namespace, name))) {
        if (!stagingName.test(entry)) continue;
        const path = resolve(resultsDir, namespace, name, entry);
        await rm(path, { recursive: true, force: true });
        removed.push(path);
      }
    }
  }
  return removed;
}

export async function discardStaging(staging: string): Promise<void> {
  await rm(staging, { recursive: true, force: true });
}

export const jobLogName = 'job.log';
export const resultsSubdirectory = (location: string): string => join(location, 'results');

/**
 * What a committed location holds: only verified results are ever renamed into place, so its
 * existence is the proof. Files are counted as retrieval counts them (everything under results/ that
 * is not a directory, links included); undefined when nothing was committed.
 */
export async function committedResults(location: string): Promise<{ files: number; bytes: number; committedAt: Date } | undefined> {
  let committedAt: Date;
  try {
    committedAt = (await lstat(location)).ctime;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let files = 0;
  let bytes = 0;
  for (const entry of await readdir(resultsSubdirectory(location), { recursive: true, withFileTypes: true }).catch(() => [])) {
    if (entry.isDirectory()) continue;
    files += 1;
    if (entry.isFile()) bytes += (await lstat(join(entry.parentPath, entry.name))).size;
  }
  return { files, bytes, committedAt };
}
