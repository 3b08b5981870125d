// The simulator's configuration: GPU types with prices and stock per data center, data centers,
// rate limits and timings. Every field has a default, so `{}` serves the demo; a list given in full
// (gpuTypes, dataCenters) replaces the default list rather than merging with it.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

export const VOLUME_TYPES = ['STANDARD', 'HIGH_PERFORMANCE'] as const;

const regions = ['NORTH_AMERICA', 'SOUTH_AMERICA', 'EUROPE', 'ASIA', 'MIDDLE_EAST', 'AFRICA', 'OCEANIA', 'UNKNOWN'] as const;

const priceSchema = z.union([
  // A bare number is the secure price; the type is then not offered on the community cloud.
  z.number().nonnegative().transform((secure) => ({ secure, community: null })),
  z.strictObject({ secure: z.number().nonnegative(), community: z.number().nonnegative().nullable().default(null) }),
]);

const gpuTypeSchema = z.strictObject({
  id: z.string().min(1),
  displayName: z.string().min(1),
  memoryInGb: z.number().int().positive(),
  pricePerHour: priceSchema,
  manufacturer: z.enum(['NVIDIA', 'AMD', 'UNKNOWN']).optional(),
  maxCount: z.number().int().positive().default(8),
  cudaVersion: z.string().regex(/^\d+\.\d+$/).default('12.8'),
  /** Free GPUs of this type per data center id. A pod of `gpu.count` N takes N of them. */
  stock: z.record(z.string(), z.number().int().nonnegative()).default({}),
});

const dataCenterSchema = z.strictObject({
  id: z.string().min(1),
  name: z.string().min(1),
  region: z.enum(regions).default('UNKNOWN'),
  globalNetwork: z.boolean().default(false),
  compliance: z.array(z.string()).default([]),
  /** The network volume tiers it offers, the first its default; [] offers none. */
  networkVolumeTypes: z.array(z.enum(VOLUME_TYPES)).default(['STANDARD']),
});

/** Ids of what a config presets (volumes, registries): what the product accepts as a resource id. */
const presetId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, '1-64 letters, digits, _ or -');

/** A network volume that exists from the start, so a test can name a fixed id (resources.ts). */
const presetVolumeSchema = z.strictObject({
  id: presetId,
  name: z.string().min(1),
  size: z.number().int().min(10).max(4096),
  dataCenter: z.string().min(1),
  /** Default: the data center's first networkVolumeTypes entry. */
  type: z.enum(VOLUME_TYPES).optional(),
  /** The account key that owns it; absent: every account key has it. */
  owner: z.string().min(1).optional(),
});

/** A registry credential that exists from the start (its username and password are never served). */
const presetRegistrySchema = z.strictObject({
  id: presetId,
  name: z.string().min(1),
  username: z.string().min(1),
  password: z.string().min(1),
  owner: z.string().min(1).optional(),
});

/** What a pod-scoped key may be refused on its own pod (API-NOTES §4.1: "delete permission varies by deployment"). */
export const podKeyRefusalSchema = z.enum(['delete', 'terminate', 'stop', 'restart', 'start']);

/** Scopes a key may carry (API-NOTES 2026-12 addendum names account:read; the rest are [I]). */
export const API_KEY_SCOPES = ['pods:read', 'pods:write', 'account:read', 'network-volumes:read', 'network-volumes:write', 'registries:read', 'registries:write'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

const portSchema = z.number().int().min(1).max(65535);

const rateLimitWindowSchema = z.strictObject({
  quota: z.number().int().positive(),
  seconds: z.number().int().positive(),
});

/**
 * What the simulator knows of an image, keyed by the create call's `image` (an image not listed has
 * no entrypoint and no sshd of its own, like Runpod's base images started with `args`).
 */
export const imageSchema = z
  .strictObject({
    /** The image's ENTRYPOINT (exec form): the argv split from `args` is appended to it, as Docker does. */
    entrypoint: z.array(z.string().min(1)).min(1).optional(),
    /**
     * The image's start script runs an sshd of its own on port 22, with host keys made fresh in each
     * container, before it execs the args (as images that start sshd when PUBLIC_KEY is set do). Only
     * an ENTRYPOINT can do that: `args` replace the CMD, so a start script in the CMD never runs.
     */
    ownSshd: z.boolean().default(false),
    /** Commands absent from the pod's file system (hidden in the container's mount namespace), e.g. ["curl"]. */
    withoutCommands: z.array(z.string().regex(/^[A-Za-z0-9._+-]+$/, 'a command name')).default([]),
    /**
     * A private image: it pulls only for a pod whose create named a registry credential with this
     * username and password; any other pod stays pulling, refused, with backoff (pull.ts).
     */
    registryAuth: z.strictObject({ username: z.string().min(1), password: z.string().min(1) }).optional(),
  })
  .refine((image) => !image.ownSshd || image.entrypoint !== undefined, {
    message: 'ownSshd needs an entrypoint (args replace the CMD, so only an ENTRYPOINT can start the image\'s sshd)',
    path: ['ownSshd'],
  });

const simConfigSchemaBase = z
  .strictObject({
    gpuTypes: z.array(gpuTypeSchema).min(1).prefault(() => defaultGpuTypes()),
    dataCenters: z.array(dataCenterSchema).min(1).prefault(() => defaultDataCenters()),
    rateLimits: z
      .strictObject({
        enabled: z.boolean().default(true),
        // Windows are counted per key from that key's first request in the window (not wall-clock
        // aligned), so a burst in a test never straddles a boundary by chance.
        minute: rateLimitWindowSchema.default({ quota: 60, seconds: 60 }),
        hour: rateLimitWindowSchema.default({ quota: 3000, seconds: 3600 }),
      })
      .prefault({}),
    timings: z
      .strictObject({
        /** Delay after the container starts before its ports are assigned (reachable and reported). */
        bootDelayMs: z.number().int().nonnegative().default(0),
        /** Delay before a container whose main process exited is started again (Runpod restart-loops). */
        restartDelayMs: z.number().int().nonnegative().default(2000),
        /** Delay before answering a create, to exercise client timeouts. */
        createLatencyMs: z.number().int().nonnegative().default(0),
        /** A refused image pull is tried again after this, doubling up to 5 minutes (pull.ts). */
        pullBackoffMs: z.number().int().positive().default(10_000),
      })
      .prefault({}),
    pods: z
      .strictObject({
        /** What a pod runs when the create call sends no `args` (the image's CMD; split like `args`). */
        defaultArgs: z.string().default('sleep infinity'),
        /** Bytes of each pod's stdout/stderr kept for GET /_sim/pods/{id}/logs. */
        logBytes: z.number().int().positive().default(65536),
        /**
         * Lines kept per pod and per source (`container`, `system`) for GET /v2/pods/{id}/logs; the
         * oldest go first.
         */
        logLines: z.number().int().positive().default(5000),
        /**
         * The statuses a pod reports while it boots: RUNNING from the create on (measured on the live
         * service, API-NOTES §3), or PROVISIONING until its container starts, STARTING until its ports
         * answer, then RUNNING (the 2026-12 docs).
         */
        statusFlow: z.enum(['running-at-once', 'provisioning-starting-running']).default('running-at-once'),
        /**
         * GET /v2/pods answers at most this many pods per page, with `pagination: {nextCursor,
         * hasNextPage}` beside `pods` and the next page at `?cursor=` (API-NOTES 2026-12 addendum, part
         * 2). Absent: one answer, no pagination, as the stored spec says.
         */
        pageSize: z.number().int().positive().optional(),
        /** How long a page's cursor may be asked for; later (or one never issued) is a 400. [I] */
        cursorTtlMs: z.number().int().positive().default(300_000),
      })
      .prefault({}),
    images: z.record(z.string().min(1), imageSchema).default({}),
    /** Network volumes and registry credentials that exist when the simulator starts. */
    networkVolumes: z.array(presetVolumeSchema).default([]),
    registries: z.array(presetRegistrySchema).default([]),
    podKeys: z
      .strictObject({
        /** `DELETE /v2/pods/{id}` and the actions a pod key is refused (403) on its own pod; reading it stays allowed. */
        refuse: z.array(podKeyRefusalSchema).default([]),
      })
      .prefault({}),
    /** How long the pod list lags behind creates and deletes (API-NOTES S6 listVisibilityLag). */
    listLag: z
      .strictObject({
        /** A new pod is missing from GET /v2/pods this long after its create answered. */
        createdMs: z.number().int().nonnegative().default(0),
        /** A deleted pod is still in GET /v2/pods (as it was) this long after its delete. */
        deletedMs: z.number().int().nonnegative().default(0),
        /** GET /v2/pods/{id} lags too: 404 for a new pod, the old pod for a deleted one. */
        get: z.boolean().default(false),
      })
      .prefault({}),
    /** Account-wide limits (API-NOTES 2026-12 addendum), the same for every account key. */
    account: z
      .strictObject({
        /** A pod start that would bring the account's running pods above this (USD/h) is refused. */
        spendRateUsdPerHour: z.number().positive().default(80),
        /** Served by GET /v2/account/limits only: the simulator runs no serverless workers. */
        serverlessWorkers: z.number().int().nonnegative().default(5),
      })
      .prefault({}),
    /**
     * Account keys with scopes. A key listed here and not in `apiKeys` is an account of its own; a key
     * in both gets only these scopes. Keys not listed here have every scope.
     */
    keys: z.array(z.strictObject({ key: z.string().min(1), scopes: z.array(z.enum(API_KEY_SCOPES)) })).default([]),
    /**
     * What a pod can reach besides itself and the API: each `forward` maps 127.0.0.1:<podPort> inside
     * every pod to 127.0.0.1:<hostPort> of this machine, as a real pod reaches a service on the
     * internet (an object store in the tests). Empty by default: pods reach nothing else.
     */
    network: z
      .strictObject({
        forward: z.array(z.strictObject({ podPort: portSchema, hostPort: portSchema })).default([]),
      })
      .prefault({}),
  });

export const simConfigSchema = simConfigSchemaBase
  .superRefine((config, ctx) => {
    const podPorts = new Set<number>();
    config.network.forward.forEach(({ podPort }, index) => {
      if (podPorts.has(podPort)) ctx.addIssue({ code: 'custom', path: ['network', 'forward', index, 'podPort'], message: `port ${podPort} is forwarded twice` });
      podPorts.add(podPort);
    });
    const dcIds = new Set(config.dataCenters.map((dc) => dc.id));
    presetIssues(config).forEach((issue) => ctx.addIssue({ code: 'custom', ...issue }));
    config.gpuTypes.forEach((type, index) => {
      for (const dcId of Object.keys(type.stock)) {
        if (!dcIds.has(dcId)) {
          ctx.addIssue({ code: 'custom', path: ['gpuTypes', index, 'stock', dcId], message: `unknown data center ${dcId}` });
        }
      }
    });
  });

/** Preset volumes in a data center that offers their tier; no id twice. */
function presetIssues(config: z.output<typeof simConfigSchemaBase>): { path: PropertyKey[]; message: string }[] {
  const issues: { path: PropertyKey[]; message: string }[] = [];
  const seen = new Set<string>();
  config.networkVolumes.forEach((volume, index) => {
    const dc = config.dataCenters.find((candidate) => candidate.id === volume.dataCenter);
    const type = volume.type ?? dc?.networkVolumeTypes[0];
    if (!dc) issues.push({ path: ['networkVolumes', index, 'dataCenter'], message: `unknown data center ${volume.dataCenter}` });
    else if (type === undefined || !dc.networkVolumeTypes.includes(type)) {
      issues.push({ path: ['networkVolumes', index, 'type'], message: `${dc.id} offers no ${type === undefined ? '' : `${type} `}network volumes` });
    }
    if (seen.has(volume.id)) issues.push({ path: ['networkVolumes', index, 'id'], message: `volume ${volume.id} is listed twice` });
    seen.add(volume.id);
  });
  const registryIds = new Set<string>();
  config.registries.forEach((registry, index) => {
    if (registryIds.has(registry.id)) issues.push({ path: ['registries', index, 'id'], message: `registry ${registry.id} is listed twice` });
    registryIds.add(registry.id);
  });
  return issues;
}

export type SimConfigInput = z.input<typeof simConfigSchema>;
export type SimConfig = z.output<typeof simConfigSchema>;
export type PodKeyRefusal = z.output<typeof podKeyRefusalSchema>;
export type GpuTypeConfig = SimConfig['gpuTypes'][number];
export type DataCenterConfig = SimConfig['dataCenters'][number];

export function parseConfig(input: unknown): SimConfig {
  const result = simConfigSchema.safeParse(input ?? {});
  if (!result.success) {
    // One line, each issue led by its field (network.forward[1].podPort), as a CLI's error should be.
    const field = (path: readonly PropertyKey[]): string => path.map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`)).join('');
    const issues = result.error.issues.map((issue) => `${field(issue.path) || '(the config)'}: ${issue.message}`);
    throw new Error(`invalid simulator config: ${issues.join('; ')}`);
  }
  return result.data;
}

/** Reads a YAML or JSON config file (YAML is a superset of JSON, so one parser reads both). */
export function loadConfigFile(path: string): SimConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new Error(`cannot read ${path}: ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (code ?? String(error))}`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    throw new Error(`${path} is not YAML or JSON: ${(error instanceof Error ? error.message : String(error)).split('\n')[0] ?? ''}`);
  }
  return parseConfig(parsed);
}

function defaultGpuTypes(): z.input<typeof gpuTypeSchema>[] {
  return [
    { id: 'NVIDIA GeForce RTX 4090', displayName: 'RTX 4090', memoryInGb: 24, pricePerHour: { secure: 0.69, community: 0.34 }, stock: { 'EU-RO-1': 3, 'US-TX-3': 2 } },
    { id: 'NVIDIA A40', displayName: 'A40', memoryInGb: 48, pricePerHour: 0.4, stock: { 'EU-RO-1': 2, 'US-TX-3': 2 } },
    { id: 'NVIDIA RTX A6000', displayName: 'RTX A6000', memoryInGb: 48, pricePerHour: { secure: 0.49, community: 0.33 }, stock: { 'EU-RO-1': 2, 'US-TX-3': 1 } },
    { id: 'NVIDIA A100 80GB PCIe', displayName: 'A100 PCIe', memoryInGb: 80, pricePerHour: { secure: 1.64, community: 1.19 }, stock: { 'EU-RO-1': 1, 'US-TX-3': 2 } },
    { id: 'NVIDIA H100 80GB HBM3', displayName: 'H100 SXM', memoryInGb: 80, pricePerHour: 2.99, stock: { 'EU-RO-1': 1, 'US-TX-3': 1 } },
  ];
}

function defaultDataCenters(): z.input<typeof dataCenterSchema>[] {
  return [
    { id: 'EU-RO-1', name: 'EU Romania 1', region: 'EUROPE', compliance: ['GDPR', 'ISO_IEC_27001', 'SOC_2_TYPE_2'], networkVolumeTypes: ['STANDARD'] },
    { id: 'US-TX-3', name: 'US Texas 3', region: 'NORTH_AMERICA', globalNetwork: true, compliance: ['SOC_2_TYPE_2'], networkVolumeTypes: ['STANDARD', 'HIGH_PERFORMANCE'] },
  ];
}
