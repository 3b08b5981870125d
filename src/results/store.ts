// The result store on the controller's disk: `<results-dir>/<namespace>/<name>/<uid>/`. Files land in
// a temporary directory beside it and the directory is renamed into place only once every file is
// verified, so a reader never sees a partial result.
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';

export function resultLocation(resultsDir: string, namespace: string, name: string, uid: string): string {
  return resolve(resultsDir, namespace, name, uid);
}

/** A fresh empty directory beside the final location, for one retrieval try. */
export async function stagingDirectory(location: string): Promise<string> {
  const staging = `${location}.partial-${randomBytes(4).toString('hex')}`;
  await mkdir(staging, { recursive: true });
  return staging;
}

/** Moves a verified staging directory into place (replacing what an earlier verified try left). */
export async function commitResults(staging: string, location: string): Promise<void> {
  await rm(location, { recursive: true, force: true });
  await rename(staging, location);
}

export async function discardStaging(staging: string): Promise<void> {
  await rm(staging, { recursive: true, force: true });
}

export const jobLogName = 'job.log';
export const resultsSubdirectory = (location: string): string => join(location, 'results');
