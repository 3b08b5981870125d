// Request bodies of the v2 pod endpoints, as strict as the live service (unevaluatedProperties:false:
// a leftover v1 key such as gpuTypeIds is a 422).
import { z } from 'zod';

const cudaVersion = z.string().regex(/^\d+\.\d+$/);

export const createPodSchema = z.strictObject({
  name: z.string().min(1),
  image: z.string().optional(),
  args: z.string().optional(),
  disk: z.number().int().min(1).optional(),
  env: z.record(z.string(), z.string()).optional(),
  ports: z.array(z.string()).optional(),
  registry: z.string().nullable().optional(),
  cloud: z.enum(['SECURE', 'COMMUNITY']).optional(),
  cpu: z.strictObject({ id: z.string(), vcpuCount: z.number().int().min(1).optional() }).optional(),
  gpu: z
    .strictObject({
      id: z.string(),
      count: z.number().int().min(1).optional(),
      allowedCudaVersions: z.array(cudaVersion).optional(),
      minCudaVersion: cudaVersion.optional(),
    })
    .optional(),
  dataCenterIds: z.array(z.string()).optional(),
  globalNetworking: z.boolean().optional(),
  mounts: z
    .strictObject({
      persistent: z.strictObject({ size: z.number().int().min(10), path: z.string() }).optional(),
      network: z.array(z.strictObject({ volumeId: z.string(), path: z.string() })).max(1).optional(),
    })
    .optional(),
  startJupyter: z.boolean().optional(),
  startSsh: z.boolean().optional(),
  templateId: z.string().min(1).optional(),
});

export type CreatePodBody = z.output<typeof createPodSchema>;

export const podActionSchema = z.strictObject({
  action: z.enum(['start', 'stop', 'restart', 'terminate']),
});

export type PodActionName = z.output<typeof podActionSchema>['action'];

/** Cross-field rules the handler enforces (v2 answers these with 400, not 422). */
export function ruleViolation(body: CreatePodBody): string | null {
  if (body.gpu && body.cpu) return 'exactly one of gpu or cpu must be set';
  if (!body.gpu && !body.cpu) return 'exactly one of gpu or cpu must be set';
  if (body.cpu) return 'CPU pods are not offered by this simulator';
  if (body.gpu?.minCudaVersion && (body.gpu.allowedCudaVersions?.length ?? 0) > 0) {
    return 'gpu.allowedCudaVersions and gpu.minCudaVersion are mutually exclusive';
  }
  if (body.mounts?.persistent && body.mounts.network) return 'at most one of mounts.persistent or mounts.network may be set';
  for (const [key, value] of Object.entries(body.env ?? {})) {
    if (key === '' || key.includes('=') || key.includes('\0') || value.includes('\0')) return `invalid env entry ${JSON.stringify(key)}`;
  }
  if (body.args?.includes('\0')) return 'args must not contain NUL';
  for (const port of body.ports ?? []) {
    const match = /^(\d+)\/(tcp|http)$/.exec(port);
    if (!match || Number(match[1]) < 1 || Number(match[1]) > 65535) return `invalid port ${port}: expected <port>/<tcp|http>`;
  }
  return null;
}

export function cudaAllowed(gpu: NonNullable<CreatePodBody['gpu']>, version: string): boolean {
  if (gpu.allowedCudaVersions && gpu.allowedCudaVersions.length > 0) return gpu.allowedCudaVersions.includes(version);
  if (gpu.minCudaVersion) return compareVersions(version, gpu.minCudaVersion) >= 0;
  return true;
}

function compareVersions(a: string, b: string): number {
  const [aMajor = 0, aMinor = 0] = a.split('.').map(Number);
  const [bMajor = 0, bMinor = 0] = b.split('.').map(Number);
  return aMajor - bMajor || aMinor - bMinor;
}
