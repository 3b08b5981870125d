// Builds the CustomResourceDefinition from the zod schemas: `npm run generate` writes it to crds/.
import { z } from 'zod';
import { group, kind, plural, version } from './runpodrun.ts';
import { runpodRunSpec } from './spec.ts';
import { runpodRunStatus } from './status.ts';

type JsonSchema = Record<string, unknown>;

/** zod's OpenAPI 3.0 output, trimmed to what a structural CRD schema accepts. */
function structural(schema: z.ZodType): JsonSchema {
  const json = z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', unrepresentable: 'throw' }) as JsonSchema;
  const clean = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(clean);
    if (node === null || typeof node !== 'object') return node;
    const out: JsonSchema = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === '$schema' || key === 'additionalProperties') continue;
      if (key === 'format' && value === 'date-time') { out[key] = value; continue; }
      // Enum values, defaults and CEL rules are data, not schemas: keep them whole.
      out[key] = ['enum', 'default', 'x-kubernetes-validations', 'x-kubernetes-list-map-keys', 'required'].includes(key)
        ? value : clean(value);
    }
    return out;
  };
  return clean(json) as JsonSchema;
}

const column = (name: string, jsonPath: string, type: string, description: string, priority = 0) =>
  ({ name, type, jsonPath, description, ...(priority ? { priority } : {}) });

export function runpodRunCrd(): JsonSchema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { kind, listKind: `${kind}List`, plural, singular: 'runpodrun', shortNames: ['rpr'], categories: ['runpod'] },
      versions: [{
        name: version,
        served: true,
        storage: true,
        subresources: { status: {} },
        // `kubectl delete rpr --field-selector status.phase=Succeeded`: the cleanup we offer instead of a TTL.
        selectableFields: [{ jsonPath: '.status.phase' }, { jsonPath: '.status.reason' }],
        additionalPrinterColumns: [
          column('Phase', '.status.phase', 'string', 'Where the run stands'),
          column('Reason', '.status.reason', 'string', 'Why'),
          column('GPU', '.status.pod.gpuType', 'string', 'GPU type of the pod'),
          column('Pod', '.status.pod.id', 'string', 'Runpod pod id'),
          column('$/hr', '.status.pod.costPerHour', 'string', 'Price of the pod per hour'),
          column('Cost', '.status.estimatedCostUsd', 'string', 'Estimated spend in USD'),
          column('Retries', '.status.retries', 'integer', 'Tries begun after a failure (spec.retry)'),
          column('Age', '.metadata.creationTimestamp', 'date', 'Age of the run'),
          // A string, not a date: kubectl prints a future date column as <invalid>.
          column('Deadline', '.status.pod.deadline', 'string', 'When the pod is deleted whatever it does', 1),
          column('DataCenter', '.status.pod.dataCenterId', 'string', 'Data center of the pod', 1),
          column('Exit', '.status.job.exitCode', 'integer', 'Exit code of the job', 1),
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            description: 'RunpodRun runs one batch job on a Runpod GPU pod and deletes the pod when it ends.',
            required: ['spec'],
            properties: {
              apiVersion: { type: 'string', description: 'APIVersion of this representation of the object.' },
              kind: { type: 'string', description: 'Kind of the object.' },
              metadata: { type: 'object' },
              spec: structural(runpodRunSpec),
              // Defaulted so that a run the controller has not written yet reads "generation 0 observed":
              // kstatus (Flux, kpt) takes an object with no status at all for Current, i.e. done.
              status: { ...structural(runpodRunStatus), default: { observedGeneration: 0 } },
            },
          },
        },
      }],
    },
  };
}
