// Zod schemas for what Runpod REST v2 answers and what we send. Answers are parsed tolerantly: the
// live service deviates from its spec (nulls while a pod boots, `cost` kept after stop, numbers sent
// as strings), so unknown fields pass through and only what a caller relies on is required.
import { z } from 'zod';

export const POD_STATUSES = ['PROVISIONING', 'STARTING', 'RUNNING', 'EXITED', 'ERROR', 'TERMINATED'] as const;
export type KnownPodStatus = (typeof POD_STATUSES)[number];
export type PodStatus = KnownPodStatus | 'UNKNOWN';

export const POD_ACTIONS = ['start', 'stop', 'restart', 'terminate'] as const;
export type PodAction = (typeof POD_ACTIONS)[number];

const AVAILABILITY_LEVELS = ['NONE', 'LOW', 'MEDIUM', 'HIGH'] as const;
export type Availability = (typeof AVAILABILITY_LEVELS)[number] | 'UNKNOWN';

// A value Runpod adds later (or leaves out) must not make an answer unreadable: it becomes UNKNOWN.
function oneOf<T extends string>(known: readonly T[]) {
  return z.unknown().optional().transform((v): T | 'UNKNOWN' => (typeof v === 'string' && (known as readonly string[]).includes(v) ? (v as T) : 'UNKNOWN'));
}
const podStatus = oneOf(POD_STATUSES);
const availability = oneOf(AVAILABILITY_LEVELS);

/** A number that may arrive as a numeric string; anything unusable becomes null. */
const looseNumber = z
  .union([z.number(), z.string(), z.null()])
  .optional()
  .transform((value): number | null => {
    if (value === null || value === undefined || value === '') return null;
    const n = typeof value === 'number' ? value : Number(value);
    return Number.isFinite(n) ? n : null;
  });

const envValue = z.union([z.string(), z.number(), z.boolean(), z.null()]).transform((v) => (v === null ? '' : String(v)));

const sshEndpoint = z
  .object({
    host: z.string(),
    port: z.coerce.number().int(),
    username: z.string().nullish(),
    command: z.string().nullish(),
  })
  .loose();

const runtimePort = z
  .object({
    private: looseNumber,
    public: looseNumber,
    type: z.string().nullish(),
    ip: z.string().nullish(),
  })
  .loose();

const runtime = z
  .object({
    uptime: looseNumber,
    ports: z.array(runtimePort).nullish(),
  })
  .loose();

export const podSchema = z
  .object({
    id: z.string().min(1),
    name: z.string().nullish().transform((v) => v ?? ''),
    status: podStatus,
    actions: z.array(z.string()).nullish().transform((v) => v ?? []),
    image: z.string().nullish(),
    args: z.string().nullish(),
    disk: looseNumber,
    ports: z.array(z.string()).nullish().transform((v) => v ?? []),
    env: z.record(z.string(), envValue).nullish().transform((v) => v ?? {}),
    cloud: z.string().nullish(),
    dataCenterId: z.string().nullish(),
    cudaVersion: z.string().nullish(),
    gpu: z.object({ id: z.string(), count: looseNumber }).loose().nullish(),
    cpu: z.object({ id: z.string() }).loose().nullish(),
    ssh: z
      .object({ proxy: sshEndpoint.nullish(), direct: sshEndpoint.nullish() })
      .loose()
      .nullish(),
    // USD per hour. The spec says 0 once stopped; measured live it stays at the running rate.
    cost: looseNumber,
    locked: z.boolean().nullish(),
    runtime: runtime.nullish(),
    createdAt: z.string().nullish(),
    startedAt: z.string().nullish(),
  })
  .loose();

export type Pod = z.output<typeof podSchema>;
export type PodSshEndpoint = z.output<typeof sshEndpoint>;

export const listPodsResponseSchema = z
  .object({
    pods: z.array(podSchema),
    pagination: z
      .object({ nextCursor: z.string().nullish(), hasNextPage: z.boolean().nullish() })
      .loose()
      .nullish(),
  })
  .loose();

// What we send is checked strictly: v2 answers 422 to any field it does not know
// (`unevaluatedProperties: false`), so a typo is cheaper to catch here than as a spent call.
const createGpu = z
  .object({
    id: z.string().min(1),
    count: z.number().int().min(1).optional(),
    allowedCudaVersions: z.array(z.string().regex(/^\d+\.\d+$/)).optional(),
    minCudaVersion: z.string().regex(/^\d+\.\d+$/).optional(),
  })
  .strict();

const createCpu = z.object({ id: z.string().min(1), vcpuCount: z.number().int().min(2) }).strict();

const mounts = z
  .object({
    persistent: z.object({ size: z.number().int().min(10), path: z.string().min(1) }).strict().optional(),
    network: z
      .array(z.object({ volumeId: z.string().min(1), path: z.string().min(1) }).strict())
      .max(1)
      .optional(),
  })
  .strict();

export const createPodRequestSchema = z
  .object({
    name: z.string().min(1).max(191),
    image: z.string().min(1).optional(),
    templateId: z.string().min(1).optional(),
    args: z.string().optional(),
    disk: z.number().int().min(1).optional(),
    ports: z.array(z.string().regex(/^\d+\/(?:http|tcp)$/)).optional(),
    env: z.record(z.string(), z.string()).optional(),
    registry: z.string().nullable().optional(),
    cloud: z.enum(['SECURE', 'COMMUNITY']).optional(),
    gpu: createGpu.optional(),
    cpu: createCpu.optional(),
    dataCenterIds: z.array(z.string().min(1)).optional(),
    mounts: mounts.optional(),
    globalNetworking: z.boolean().optional(),
    startSsh: z.boolean().optional(),
    startJupyter: z.boolean().optional(),
  })
  .strict()
  .refine((r) => r.image !== undefined || r.templateId !== undefined, { message: 'image is required unless templateId is set', path: ['image'] })
  .refine((r) => (r.gpu === undefined) !== (r.cpu === undefined), { message: 'exactly one of gpu or cpu must be set', path: ['gpu'] })
  .refine((r) => !(r.gpu?.minCudaVersion && r.gpu.allowedCudaVersions && r.gpu.allowedCudaVersions.length > 0), {
    message: 'minCudaVersion and a non-empty allowedCudaVersions are mutually exclusive',
    path: ['gpu'],
  });

export type CreatePodRequest = z.input<typeof createPodRequestSchema>;

const gpuTypeSchema = z
  .object({
    id: z.string().min(1),
    name: z.string().nullish(),
    manufacturer: z.string().nullish(),
    memory: looseNumber,
    secure: z.boolean().nullish(),
    community: z.boolean().nullish(),
    price: z.object({ secure: looseNumber, community: looseNumber }).loose().nullish(),
    maxCount: z.object({ secure: looseNumber, community: looseNumber }).loose().nullish(),
    availability,
    dataCenters: z
      .array(z.object({ id: z.string(), name: z.string().nullish(), availability }).loose())
      .nullish(),
    cudaVersions: z.array(z.object({ version: z.string(), available: z.boolean().nullish() }).loose()).nullish(),
  })
  .loose();

export const listGpuTypesResponseSchema = z.object({ gpus: z.array(gpuTypeSchema) }).loose();
export type RawGpuType = z.output<typeof gpuTypeSchema>;

const dataCenterSchema = z
  .object({
    id: z.string().min(1),
    name: z.string().nullish(),
    region: z.string().nullish(),
    globalNetwork: z.boolean().nullish(),
    gpuAvailability: z
      .array(z.object({ id: z.string(), name: z.string().nullish(), availability }).loose())
      .nullish(),
  })
  .loose();

export const listDataCentersResponseSchema = z.object({ dataCenters: z.array(dataCenterSchema) }).loose();
export type RawDataCenter = z.output<typeof dataCenterSchema>;

/**
 * GET /v2/account/limits (2026-12 docs; not in the stored openapi-v2.json): `spendRate` is the hourly
 * cap in USD checked when a pod starts. Only what the docs name is read; the rest passes through.
 */
export const accountLimitsSchema = z
  .object({
    spendRate: z.coerce.number().positive().finite(),
    serverlessWorkers: looseNumber,
  })
  .loose();
export type AccountLimits = z.output<typeof accountLimitsSchema>;

/** GET /v2/network-volumes/{id} (openapi-v2.json NetworkVolume): its data center binds every pod that mounts it. */
export const networkVolumeSchema = z
  .object({ id: z.string().min(1), name: z.string().nullish(), size: looseNumber, dataCenter: z.string().min(1) })
  .loose();
export type NetworkVolume = z.output<typeof networkVolumeSchema>;

/** A registry credential (openapi-v2.json Registry): username and password are write-only, never answered. */
export const registrySchema = z.object({ id: z.string().min(1), name: z.string() }).loose();
export type Registry = z.output<typeof registrySchema>;
export const listRegistriesResponseSchema = z.object({ registries: z.array(registrySchema) }).loose();

/** POST /v2/registries: name, username and password (secret). */
export interface CreateRegistryRequest { name: string; username: string; password: string }

/** RFC 9457 problem body as Runpod sends it; v1-era `error`/`message` keys are tolerated. */
export const problemSchema = z
  .object({
    title: z.string().nullish(),
    status: z.number().nullish(),
    detail: z.string().nullish(),
    errors: z.array(z.unknown()).nullish(),
    error: z.string().nullish(),
    message: z.string().nullish(),
  })
  .loose();
export type Problem = z.output<typeof problemSchema>;
