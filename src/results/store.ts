// The result store on the controller's disk: `<results-dir>/<namespace>/<name>/<uid>/`. Files land in
// a staging directory beside it and the directory is renamed into place only once every file is
// verified, so a reader never sees a partial result. A pod's staging directory outlives the leader
// that started it, so a retrieval longer than a leader's term resumes instead of starting over.
import { createHash } from 'node:crypto';
import { lstat, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';

export function resultLocation(resultsDir: string, namespace: string, name: string, uid: string): string {
  return resolve(resultsDir, namespace, name, uid);
}

/** The staging directory of the retrieval from one pod, beside the final location: the same for every try. */
export async function stagingDirectory(location: string, podId: string): Promise<string> {
  const staging = `${location}${stagingSuffix}${createHash('sha256').update(podId).digest('hex').slice(0, 8)}`;
  await mkdir(staging, { recursive: true });
  return staging;
}

/** Moves a verified staging directory into place (replacing what an earlier verified try left). */
export async function commitResults(staging: string, location: string): Promise<void> {
  await rm(location, { recursive: true, force: true });
  await rename(staging, location);
  await discardStagingOf(location);
}

/** Removes every staging directory of `location` (those of the run's other pods too): none can be committed any more. */
export async function discardStagingOf(location: string): Promise<void> {
  const prefix = `${basename(location)}${stagingSuffix}`;
  for (const entry of await directories(dirname(location))) {
    if (entry.startsWith(prefix) && stagingName.test(entry)) await rm(join(dirname(location), entry), { recursive: true, force: true });
  }
}

const stagingSuffix = '.partial-';
const stagingName = /\.partial-[0-9a-f]{8}$/;

/**
 * Removes the staging directories no retrieval will resume: each sits at
 * `<results-dir>/<namespace>/<name>/<uid>.partial-<hex>`, and goes unless `resumable(uid)` (a run that
 * may still retrieve). Call it only while no retrieval of this store runs (the new leader, before its
 * workers start). Returns what it removed.
 */
export async function removeAbandonedStaging(resultsDir: string, resumable: (uid: string) => boolean = () => false): Promise<string[]> {
  const removed: string[] = [];
  for (const namespace of await directories(resolve(resultsDir))) {
    for (const name of await directories(resolve(resultsDir, namespace))) {
      for (const entry of await directories(resolve(resultsDir, namespace, name))) {
        if (!stagingName.test(entry) || resumable(entry.slice(0, entry.lastIndexOf(stagingSuffix)))) continue;
        const path = resolve(resultsDir, namespace, name, entry);
        await rm(path, { recursive: true, force: true });
        removed.push(path);
      }
    }
  }
  return removed;
}

async function directories(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
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
