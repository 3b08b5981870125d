// `npm test` runs one API server for the whole suite (each test isolates itself in a namespace).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildDist } from '../hack/build.ts';
import { startControlPlane, type ControlPlane } from './envtest/harness.ts';
import { testKubeconfigEnv } from './support/cluster.ts';

let plane: ControlPlane | undefined;

export async function globalSetup(): Promise<void> {
  const started = Date.now();
  // What ships (dist/): `kubectl runpod` runs it, and so does a controller started as the image starts it.
  await buildDist();
  const built = Date.now();
  plane = await startControlPlane({ dir: mkdtempSync(join(tmpdir(), 'envtest-suite-')) });
  process.env[testKubeconfigEnv] = plane.kubeconfigPath;
  console.log(`dist/ built in ${built - started} ms; test API server ${plane.server} ready in ${Date.now() - built} ms`);
}

export async function globalTeardown(): Promise<void> {
  await plane?.stop();
}
