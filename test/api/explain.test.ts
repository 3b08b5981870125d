// `kubectl explain` on a real API server, through the real kubectl: what a user reads about each field
// is the description the CRD carries (the user guide sends readers there for every field).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { testCluster } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { kubectl, type KubectlResult } from '../support/kubectl.ts';

const crdPath = join(import.meta.dirname, '..', '..', 'crds', 'runpodruns.runpod-operator.dev.yaml');

/** kubectl wraps descriptions to the terminal: compare words, not line breaks. */
const words = (text: string): string => text.replace(/\s+/g, ' ').trim();

/**
 * `kubectl explain ARGS`, once its answer holds `expected`. The API server publishes a CRD's schema to
 * its OpenAPI a moment after the CRD is established, so the first answers may not know the kind yet.
 */
async function explain(args: string[], expected: string): Promise<KubectlResult> {
  let last: KubectlResult | undefined;
  try {
    return await eventually(`kubectl explain ${args.join(' ')} to show ${expected}`, async () => {
      last = await kubectl(['explain', ...args]);
      return last.status === 0 && words(last.stdout).includes(expected) ? last : undefined;
    });
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}; last answer: exit ${last?.status}, ${last?.stderr || last?.stdout}`);
  }
}

describe('kubectl explain runpodrun', () => {
  test('spec --recursive lists the fields', async () => {
    await testCluster();
    const { stdout } = await explain(['runpodrun.spec', '--recursive'], 'maxRuntimeSeconds');
    for (const field of ['credentials', 'secretName', 'image', 'gpu', 'types', 'job', 'command', 'results', 's3', 'bucket', 'limits', 'maxRuntimeSeconds', 'keepPod', 'cancel']) {
      assert.match(stdout, new RegExp(`^\\s*${field}\\s`, 'm'), `kubectl explain runpodrun.spec --recursive does not list ${field}:\n${stdout}`);
    }
  });

  test('spec.limits.maxRuntimeSeconds prints that field\'s description', async () => {
    const crd = parse(readFileSync(crdPath, 'utf8'));
    const description = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.limits.properties.maxRuntimeSeconds.description as string;
    assert.ok(description, `${crdPath} has no description for spec.limits.maxRuntimeSeconds`);
    const { stdout } = await explain(['runpodrun.spec.limits.maxRuntimeSeconds'], words(description));
    assert.match(stdout, /maxRuntimeSeconds/);
  });
});
