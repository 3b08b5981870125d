// Shared bits of the API-server tests of src/kube.

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

