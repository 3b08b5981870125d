// Shared bits of the API-server tests of src/kube.
import { setTimeout as delay } from 'node:timers/promises';

export const rpr = { group: 'runpod-operator.dev', version: 'v1alpha1', plural: 'runpodruns' } as const;

export interface TestRun {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string>; resourceVersion?: string; uid?: string; finalizers?: string[] };
  spec: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** A minimal valid RunpodRun. */
export function testRun(namespace: string, name: string, labels?: Record<string, string>): TestRun {
  return {
    apiVersion: 'runpod-operator.dev/v1alpha1',
    kind: 'RunpodRun',
    metadata: { name, namespace, ...(labels ? { labels } : {}) },
    spec: {
      credentials: { secretName: 'runpod' },
      image: 'busybox',
      gpu: { types: ['NVIDIA A40'] },
      job: { command: ['true'] },
      limits: { maxRuntimeSeconds: 600 },
    },
  };
}

/** Polls until `check` returns true; fails with `what` after `timeoutMs` (a bound, not a speed claim). */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await delay(25);
  }
}
