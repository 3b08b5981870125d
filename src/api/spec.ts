// The RunpodRun spec: the single source of truth. The CRD's OpenAPI schema (with its CEL rules) is
// generated from these zod schemas, and the controller parses every spec it reads with them, so the
// API server and the controller judge a manifest the same way. Each CEL rule attached with `cel()`
// has a zod refinement beside it that says the same thing.
import { z } from 'zod';

/** A CEL rule for the CRD (x-kubernetes-validations); the zod side must enforce the same. */
interface CelRule { rule: string; message: string; fieldPath?: string; reason?: string }
const cel = (...rules: CelRule[]) => ({ 'x-kubernetes-validations': rules });

const k8sName = z.string().min(1).max(253)
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a lowercase RFC 1123 subdomain name');
const keyName = z.string().min(1).max(253)
  .regex(/^[-._a-zA-Z0-9]+$/, 'must consist of alphanumerics, "-", "_" or "."');

/** A price or cost in US dollars, as a decimal string (never a float in the API: "1.50"). */
const usdAmount = z.string()
  .regex(/^[0-9]{1,6}(\.[0-9]{1,4})?$/, 'must be a decimal amount in US dollars such as "1.50"')
  .refine((value) => Number(value) > 0, 'must be greater than 0')
  .meta(cel({ rule: 'double(self) > 0.0', message: 'must be greater than 0' }));

/** A rule on a path: the zod check and the CEL rule that say the same thing. */
interface PathRule { ok: (value: string) => boolean; rule: string; message: string }

const noDotDot: PathRule = {
  ok: (value) => !value.split('/').includes('..'), rule: "!self.split('/').exists(s, s == '..')", message: 'must not contain ".." segments',
};
// The pod's state (the watchdog's inputs keep and retrieved, the job's secrets in job.env) is on the
// container's disk, outside the run directory (protocol.ts stateDirOf), and so is out of reach of every
// path here: relative, no "..". The run directory's old state name .pod stays reserved, so a job's
// files can never be mistaken for a pod's state by a pod of an earlier version.
// Character classes, not backslashes: the pattern goes into a CEL string literal as it is.
const inStateDir = '^([.]/|/)*[.]pod(/|$)';
const outsideStateDir: PathRule = {
  ok: (value) => !new RegExp(inStateDir).test(value), rule: `!self.matches('${inStateDir}')`,
  message: 'must not be in .pod (reserved: the pod\'s state directory of earlier versions)',
};
const isRunDir = '^([.](/+|$)|/+)*$';
const belowRunDir: PathRule = {
  ok: (value) => !new RegExp(isRunDir).test(value), rule: `!self.matches('${isRunDir}')`,
  message: 'must be below the run directory, not the run directory itself (it holds the job\'s inputs, job.files among them)',
};

/** A path relative to the run directory: not absolute, no "..", so a pod cannot aim us outside it. */
const relativePath = (...rules: PathRule[]) => {
  const all = [noDotDot, ...rules];
  let path = z.string().min(1).max(1024).regex(/^[^/]/, 'must be relative to the run directory (no leading "/")');
  for (const { ok, message } of all) path = path.refine(ok, message);
  return path.meta(cel(...all.map(({ rule, message }) => ({ rule, message }))));
};

/** A size in bytes, with an optional binary suffix as Kubernetes quantities spell it ("100Gi"). */
const byteSizePattern = /^([0-9]{1,15})(Ki|Mi|Gi|Ti|Pi)?$/;
const byteSize = z.string().regex(byteSizePattern, 'must be a size in bytes such as "500Mi" or "100Gi" (suffixes Ki, Mi, Gi, Ti, Pi)');

export const DEFAULT_RESULTS_MAX_BYTES = '100Gi';

/** Bytes of a size that byteSize accepted. */
export function byteSizeValue(size: string): number {
  const [, digits, suffix] = byteSizePattern.exec(size) ?? [];
  if (digits === undefined) throw new Error(`not a size: ${size}`);
  const power = suffix ? ['Ki', 'Mi', 'Gi', 'Ti', 'Pi'].indexOf(suffix) + 1 : 0;
  return Number(digits) * 1024 ** power;
}

const keySelector = (what: string) => z.strictObject({
  name: k8sName.meta({ description: `Name of the ${what} in the run's namespace.` }),
  key: keyName.meta({ description: `Key within the ${what}.` }),
}).meta({ description: `A key of a ${what} in the same namespace as the run.` });

const envVar = z.strictObject({
  name: z.string().min(1).max(256)
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)')
    .meta({ description: 'Environment variable name.' }),
  value: z.string().max(32768).optional().meta({ description: 'Literal value. Exactly one of value and valueFrom.' }),
  valueFrom: z.strictObject({
    secretKeyRef: keySelector('Secret').optional(),
    configMapKeyRef: keySelector('ConfigMap').optional(),
  }).refine((from) => (from.secretKeyRef === undefined) !== (from.configMapKeyRef === undefined),
    'exactly one of secretKeyRef and configMapKeyRef must be set')
    .meta({
      description: 'Value read from a Secret or ConfigMap key of the run\'s namespace; delivered over SSH only.',
      ...cel({ rule: 'has(self.secretKeyRef) != has(self.configMapKeyRef)', message: 'exactly one of secretKeyRef and configMapKeyRef must be set' }),
    }).optional(),
}).refine((env) => (env.value === undefined) !== (env.valueFrom === undefined), 'exactly one of value and valueFrom must be set')
  .meta({
    description: 'An environment variable of the job, like a container\'s env.',
    ...cel({ rule: 'has(self.value) != has(self.valueFrom)', message: 'exactly one of value and valueFrom must be set' }),
  });

const jobFile = z.strictObject({
  path: relativePath(outsideStateDir).meta({ description: 'Where the file is written, relative to the run directory (not in .pod, which is reserved).' }),
  configMapKeyRef: keySelector('ConfigMap').optional(),
  secretKeyRef: keySelector('Secret').optional(),
}).refine((file) => (file.configMapKeyRef === undefined) !== (file.secretKeyRef === undefined),
  'exactly one of configMapKeyRef and secretKeyRef must be set')
  .meta({
    description: 'A file written into the run directory before the job starts.',
    ...cel({ rule: 'has(self.configMapKeyRef) != has(self.secretKeyRef)', message: 'exactly one of configMapKeyRef and secretKeyRef must be set' }),
  });

const gpu = z.strictObject({
  types: z.array(z.string().min(1).max(128)).min(1).max(20).optional()
    .meta({ description: 'Runpod GPU type ids tried in order (e.g. "NVIDIA GeForce RTX 4090"). Exactly one of types and auto.' }),
  auto: z.strictObject({
    minVramGb: z.number().int().min(1).max(1024).optional().meta({ description: 'Only GPU types with at least this much memory.' }),
    maxPricePerHour: usdAmount.optional().meta({ description: 'Only GPU types whose hourly price (for the whole count) is at most this, in USD.' }),
  }).meta({ description: 'Every GPU type in stock within these bounds, cheapest first, from one catalog read.' }).optional(),
  count: z.number().int().min(1).max(8).default(1).meta({ description: 'GPUs per pod.' }),
}).refine((g) => (g.types === undefined) !== (g.auto === undefined), 'exactly one of gpu.types and gpu.auto must be set')
  .meta({
    description: 'Which GPUs to rent.',
    ...cel({ rule: 'has(self.types) != has(self.auto)', message: 'exactly one of gpu.types and gpu.auto must be set' }),
  });

const limits = z.strictObject({
  maxRuntimeSeconds: z.number().int().min(30).max(2_592_000)
    .meta({ description: 'The pod is deleted this long after it was created, whatever it is doing (30 s to 720 h).' }),
  maxCostUsd: usdAmount.optional().meta({ description: 'The pod is deleted once its estimated spend reaches this, in USD.' }),
  bootGraceSeconds: z.number().int().min(30).max(86_400).default(1800)
    .meta({ description: 'The pod is deleted if no job started this long after it started.' }),
  retrieveGraceSeconds: z.number().int().min(30).max(604_800).default(3600)
    .meta({ description: 'The pod is deleted this long after the job ended if its results were not retrieved.' }),
  readyTimeoutSeconds: z.number().int().min(30).max(7200).default(900)
    .meta({ description: 'SSH must answer with the pinned host key within this, else the next GPU type is tried.' }),
  queueTimeoutSeconds: z.number().int().min(0).max(604_800).default(3600)
    .meta({ description: 'How long the run may wait for room (the account spend limit) before it ends Failed/NoCapacity; nothing bills while it waits (0 to 7 days).' }),
  activeDeadlineSeconds: z.number().int().min(30).max(2_592_000).optional()
    .meta({ description: 'The whole run, every try and every wait included, ends Failed/DeadlineExceeded this long after its first create; each pod\'s deadline is never later (30 s to 720 h).' }),
}).meta({ description: 'What bounds the pod\'s life and spend.' });

/** Spec fields that may change after creation; every other one is immutable (a re-run is a new object). */
const mutableSpecFields = ['keepPod', 'cancel'] as const;

/** S3 bucket naming rules (AWS's general purpose buckets; every S3-compatible store accepts these). */
export const s3BucketName = z.string().min(3).max(63)
  .regex(/^[a-z0-9][a-z0-9.-]*[a-z0-9]$/, 'must be a bucket name: lowercase letters, digits, "." and "-", starting and ending with a letter or digit')
  .refine((value) => !value.includes('..'), 'must not contain ".."')
  .refine((value) => !/^[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+$/.test(value), 'must not be formatted as an IP address')
  .meta(cel(
    { rule: "!self.contains('..')", message: 'must not contain ".."' },
    { rule: "!self.matches('^[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+$')", message: 'must not be formatted as an IP address' },
  ));

/** A key prefix: relative ('/'-separated segments, each ending in '/'), no "." or ".." segments, S3's safe characters only. */
export const s3KeyPrefix = z.string().min(2).max(512)
  .regex(/^([A-Za-z0-9!_.*'()=-]+[/])+$/, 'must be a relative key prefix ending in "/" such as "team-a/" (letters, digits and !_.*\'()=-; no leading "/", no empty segment)')
  .refine((value) => !value.split('/').some((part) => part === '.' || part === '..'), 'must not contain "." or ".." segments')
  .meta(cel({ rule: "!self.split('/').exists(s, s == '.' || s == '..')", message: 'must not contain "." or ".." segments' }));

/** An S3 endpoint: http(s) with a host, no query or fragment. */
export const s3Endpoint = z.string().max(2048)
  .regex(/^https?:[/][/][^\s/?#@]+([/][^\s?#]*)?$/, 'must be an http or https URL such as https://s3.eu-central-1.amazonaws.com')
  .refine((value) => URL.canParse(value), 'must be a valid URL')
  .meta(cel({ rule: 'isURL(self)', message: 'must be a valid URL' }));

export const s3Region = z.string().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/, 'must be a region name such as "eu-central-1"');

const s3Results = z.strictObject({
  bucket: s3BucketName.meta({ description: 'Bucket the results go to.' }),
  prefix: s3KeyPrefix.optional().meta({ description: 'Key prefix (ends in "/"); objects go under <prefix><namespace>/<name>/<uid>/.' }),
  endpoint: s3Endpoint.optional().meta({ description: 'S3-compatible endpoint URL; AWS S3 when absent.' }),
  region: s3Region.optional().meta({ description: 'Region of the bucket.' }),
  forcePathStyle: z.boolean().optional().meta({ description: 'Path-style addressing (MinIO, SeaweedFS, Ceph).' }),
  credentials: z.strictObject({
    secretName: k8sName.meta({ description: 'Secret in the run\'s namespace with AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and optionally AWS_SESSION_TOKEN.' }),
  }).optional().meta({ description: 'Keys for the bucket; absent: the controller\'s own credentials (env, IRSA, instance role), for a bucket of its --results-s3-allowed-buckets only.' }),
}).meta({ description: 'Deliver the verified results to S3-compatible object storage instead of the controller\'s --results-store.' });

const specShape = {
  credentials: z.strictObject({
    secretName: k8sName.meta({ description: 'Secret in the run\'s namespace holding the Runpod API key.' }),
    key: keyName.default('apiKey').meta({ description: 'Key of the Secret holding the API key.' }),
  }).meta({ description: 'Where the Runpod API key is.' }),
  image: z.string().min(1).max(512).meta({ description: 'Container image of the pod (needs sh, sshd, curl, sha256sum, setsid, tar).' }),
  imagePullSecret: z.strictObject({
    name: k8sName.meta({ description: 'A kubernetes.io/dockerconfigjson Secret in the run\'s namespace (kubectl create secret docker-registry) with an entry for the image\'s registry.' }),
  }).optional().meta({ description: 'Credentials for a private image: the controller keeps a Runpod registry credential for them, shared by the runs that use the same one.' }),
  gpu,
  cloud: z.enum(['SECURE', 'COMMUNITY']).default('SECURE').meta({ description: 'Runpod cloud.' }),
  dataCenterIds: z.array(z.string().min(1).max(64)).min(1).max(32).optional()
    .meta({ description: 'Runpod data centers the pod may be placed in (e.g. "EU-RO-1").' }),
  containerDiskGb: z.number().int().min(1).max(4096).default(50).meta({ description: 'Container disk size in GB.' }),
  networkVolume: z.strictObject({
    id: z.string().min(1).max(64).meta({ description: 'Runpod network volume id.' }),
    mountPath: z.string().min(2).max(1024).regex(/^\//, 'must be an absolute path').default('/workspace/data')
      .meta({ description: 'Where the volume is mounted in the pod.' }),
  }).meta({ description: 'A network volume to mount. Every pod of the run is placed in its data center (read from Runpod); dataCenterIds, when given, must include it.' }).optional(),
  job: z.strictObject({
    command: z.array(z.string().max(32768)).min(1).max(1024)
      .meta({ description: 'The job, in exec form; runs in the run directory.' }),
    env: z.array(envVar).max(256).optional()
      .refine((env) => new Set(env?.map((v) => v.name)).size === (env?.length ?? 0), 'environment variable names must be unique')
      .meta({
      description: 'Environment of the job.',
      'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'],
    }),
    files: z.array(jobFile).max(256).optional().meta({ description: 'Files written into the run directory before the job starts.' }),
  }).meta({ description: 'What runs on the pod.' }),
  results: z.strictObject({
    path: relativePath(outsideStateDir, belowRunDir).default('output')
      .meta({ description: 'Directory on the pod, below the run directory (neither it nor the reserved .pod), whose files are retrieved and verified.' }),
    maxBytes: byteSize.optional()
      .meta({ description: `A result set larger than this fails the run (ResultsTooLarge) without being retrieved; default ${DEFAULT_RESULTS_MAX_BYTES}.` }),
    s3: s3Results.optional(),
  }).default({ path: 'output' }).meta({ description: 'What is retrieved when the job ends.' }),
  limits,
  retry: z.strictObject({
    limit: z.number().int().min(0).max(10).default(0)
      .meta({ description: 'Further tries after a try that failed for the platform (its pod vanished, stopped or never booted: PodLost, BootFailed, BootTimeout, no GPU type ready), or whose job exited with a code in onExitCodes. Each try is a new pod, after the last is deleted (0 to 10).' }),
    onExitCodes: z.array(z.number().int().min(1).max(255)).max(32).optional()
      .meta({ description: 'Exit codes of the job that count as a failure worth another try; any other code ends the run Failed/JobFailed.' }),
  }).default({ limit: 0 }).meta({ description: 'Tries after a failure: never after a cancel, invalid spec, credentials, balance, results too large, the run\'s deadline or its cost cap.' }),
  keepPod: z.boolean().default(false).meta({ description: 'Keep the pod after the job ends (debugging) until the run is deleted, cancel is set, or its deadline or cost cap passes.' }),
  cancel: z.boolean().default(false).meta({ description: 'Stop the job, keep what results exist, delete the pod; the run ends Failed/Cancelled.' }),
};

/** One transition rule per immutable field, so that the error names the field that changed. */
const immutabilityRules: CelRule[] = Object.keys(specShape)
  .filter((field) => !(mutableSpecFields as readonly string[]).includes(field))
  .map((field) => ({
    rule: `has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field})`,
    message: 'is immutable: only spec.keepPod and spec.cancel may change (create a new RunpodRun to re-run)',
    fieldPath: `.${field}`,
  }));

export const runpodRunSpec = z.strictObject(specShape)
  .meta({
    description: 'What to run, on which GPUs, within which limits. Immutable but for keepPod and cancel.',
    ...cel(
      ...immutabilityRules,
      { rule: '!(has(oldSelf.cancel) && oldSelf.cancel) || (has(self.cancel) && self.cancel)', message: 'spec.cancel cannot be undone once true', fieldPath: '.cancel' },
    ),
  });

export type RunpodRunSpec = z.output<typeof runpodRunSpec>;
