// The RunpodRun status: written only by the controller, through the /status subresource. Also the
// durable record of intent (an attempt is recorded before its create call is sent).
import { z } from 'zod';

export const phases = ['Pending', 'Provisioning', 'Running', 'Retrieving', 'Succeeded', 'Failed'] as const;
export type Phase = (typeof phases)[number];

/** Machine-readable reasons of status.reason and of the conditions. */
export const reasons = [
  'Created', 'Provisioning', 'WaitingForSsh', 'PodReady', 'JobRunning', 'Retrieving',
  'Succeeded', 'NoCapacity', 'DeadlineExceeded', 'BootTimeout', 'BootFailed', 'JobFailed', 'ResultsUnverified',
  'Cancelled', 'InvalidSpec', 'CredentialsMissing', 'CredentialsRejected', 'InsufficientBalance', 'PodLost',
  'CostCapReached', 'Deleting', 'RateLimited', 'SpendLimitReached', 'CredentialsInsufficient',
  'SshSecretConflict', 'ResultsTooLarge', 'CleanupBlocked', 'WaitingForCapacity', 'CredentialsInvalid', 'Retrying', 'ImagePullFailed',
] as const;
export type Reason = (typeof reasons)[number];

const time = z.string().meta({ description: 'RFC 3339 time.', format: 'date-time' });
const usd = z.string().regex(/^[0-9]+(\.[0-9]+)?$/);

export const condition = z.object({
  type: z.string().min(1).max(316).meta({ description: 'Type of condition in CamelCase.' }),
  status: z.enum(['True', 'False', 'Unknown']).meta({ description: 'Status of the condition.' }),
  observedGeneration: z.number().int().min(0).optional().meta({ description: 'The .metadata.generation the condition was set from.' }),
  lastTransitionTime: time.meta({ description: 'Last time the condition went from one status to another.' }),
  reason: z.string().min(1).max(1024).meta({ description: 'Machine-readable CamelCase reason for the last transition.' }),
  message: z.string().max(32768).meta({ description: 'Human-readable details of the transition.' }),
}).meta({ description: 'A metav1.Condition.' });
export type Condition = z.output<typeof condition>;

export const podStatus = z.object({
  id: z.string().optional().meta({ description: 'Runpod pod id.' }),
  name: z.string().optional().meta({ description: 'Runpod pod name (<run>-<attempt>).' }),
  gpuType: z.string().optional().meta({ description: 'GPU type the pod runs on.' }),
  gpuCount: z.number().int().optional().meta({ description: 'GPUs of the pod.' }),
  dataCenterId: z.string().optional().meta({ description: 'Data center of the pod.' }),
  costPerHour: usd.optional().meta({ description: 'Price of the pod in USD per hour.' }),
  createdAt: time.optional().meta({ description: 'When the pod was created.' }),
  deadline: time.optional().meta({ description: 'When the pod is deleted whatever it is doing (createdAt + maxRuntimeSeconds).' }),
  sshHost: z.string().optional().meta({ description: 'SSH host of the pod.' }),
  sshPort: z.number().int().optional().meta({ description: 'SSH port of the pod.' }),
  state: z.string().optional().meta({ description: 'Pod state as Runpod last reported it, or Deleting / Deleted.' }),
  deletedAt: time.optional().meta({ description: 'When the pod was confirmed deleted.' }),
  listedAt: time.optional().meta({ description: 'When a pod list first showed the pod (Runpod lists a new pod only after a while).' }),
  missingSince: time.optional().meta({ description: 'When the first list that should have shown the pod did not (cleared when a list shows it again): the watchdog\'s reasons are judged at this moment, not when the controller concluded.' }),
  retrieveGraceUntil: time.optional().meta({ description: 'While the results wait for a transfer slot or move, the controller extends the pod\'s retrieve grace to this time (renewed as it goes; the pod\'s watchdog honours the same extension): the grace bounds a controller that is gone, not one that is busy.' }),
  systemLogReadAt: time.optional().meta({ description: 'When Runpod\'s system lines of the pod were last read (while it had no SSH port).' }),
  systemLog: z.string().max(512).optional().meta({ description: 'The telling line of Runpod\'s system log of the pod (a refused image pull), else its last one.' }),
  startedAgainAt: time.optional().meta({ description: 'When the controller asked Runpod to start the pod again: it stopped (EXITED) after its job ended and before its results were retrieved, which its volume still holds. Once per pod.' }),
}).meta({ description: 'The run\'s current (or last) pod.' });

export const attempt = z.object({
  name: z.string().meta({ description: 'Pod name used for the attempt.' }),
  gpuType: z.string().meta({ description: 'GPU type tried.' }),
  time: time.meta({ description: 'When the attempt was recorded (before its create call was sent).' }),
  outcome: z.enum(['Pending', 'Created', 'NoCapacity', 'Failed', 'NotReady', 'Ambiguous', 'RateLimited', 'SpendLimited']).meta({
    description: 'What came of it. RateLimited and SpendLimited: refused before anything was created; the same attempt is sent again.',
  }),
  podId: z.string().optional().meta({ description: 'Pod id, once known.' }),
  message: z.string().max(4096).optional().meta({ description: 'Details.' }),
  retryAfter: time.optional().meta({ description: 'A refused attempt (429, spend limit, or no capacity on any type) is not sent again before this time.' }),
  costUsd: usd.optional().meta({ description: 'Estimated spend of this attempt\'s pod once a later pod replaced it (counted in estimatedCostUsd).' }),
  lostAt: time.optional().meta({ description: 'When the create\'s answer was lost (timeout, 5xx, reset, a crash): the pod is looked for in lists taken after this.' }),
  try: z.number().int().min(2).optional().meta({ description: 'The try of the run (spec.retry) the attempt belongs to, from the second on (absent: the first).' }),
  reason: z.enum(reasons).optional().meta({ description: 'Why the try this attempt\'s pod ran ended, when another try followed (the reason the run would have ended with).' }),
}).meta({ description: 'One create attempt.' });

export const runpodRunStatus = z.object({
  observedGeneration: z.number().int().optional().meta({ description: 'The .metadata.generation this status was written from.' }),
  phase: z.enum(phases).optional().meta({ description: 'Where the run stands.' }),
  reason: z.enum(reasons).optional().meta({ description: 'Machine-readable reason of the phase.' }),
  message: z.string().max(32768).optional().meta({ description: 'Human-readable details.' }),
  conditions: z.array(condition).max(32).optional().meta({
    description: 'Complete, Failed, Ready, Reconciling, Stalled, PodReady, JobStarted, ResultsRetrieved, CancelRequested.',
    'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'],
  }),
  startTime: time.optional().meta({ description: 'When the controller started working on the run.' }),
  waitingSince: time.optional().meta({ description: 'When the run began waiting for capacity or for room under the account spend limit; after spec.limits.queueTimeoutSeconds it ends Failed/NoCapacity.' }),
  completionTime: time.optional().meta({ description: 'When the run ended.' }),
  pod: podStatus.optional(),
  networkVolume: z.object({
    id: z.string().meta({ description: 'spec.networkVolume.id.' }),
    dataCenterId: z.string().meta({ description: 'Its data center, where every pod of the run is placed.' }),
  }).optional().meta({ description: 'The network volume as Runpod reported it, read once before the first create.' }),
  registry: z.object({
    id: z.string().meta({ description: 'Runpod registry credential id.' }),
    name: z.string().meta({ description: 'Its name: this install and a digest of the credential (shared by runs with the same one).' }),
  }).optional().meta({ description: 'The Runpod registry credential spec.imagePullSecret made, passed with every create.' }),
  retries: z.number().int().min(0).optional().meta({ description: 'Tries begun after a failure (spec.retry).' }),
  nextTryAfter: time.optional().meta({ description: 'The next try (spec.retry) creates no pod before this time (a backoff from 10 s doubling to 5 min).' }),
  attempts: z.array(attempt).max(64).optional().meta({ description: 'Every create, recorded before its request is sent.' }),
  job: z.object({
    startedAt: time.optional().meta({ description: 'When the job started on the pod.' }),
    finishedAt: time.optional().meta({ description: 'When the job ended.' }),
    exitCode: z.number().int().optional().meta({ description: 'Exit code of the job.' }),
  }).optional().meta({ description: 'The job on the pod.' }),
  results: z.object({
    files: z.number().int().optional().meta({ description: 'Files retrieved and verified.' }),
    bytes: z.number().int().optional().meta({ description: 'Bytes retrieved.' }),
    location: z.string().optional().meta({ description: 'Where the verified results are.' }),
    path: z.enum(['direct', 'controller']).optional().meta({ description: 'Which path carried the bytes to object storage: direct (the pod uploaded them) or controller (streamed through the controller).' }),
    retrievedAt: time.optional().meta({ description: 'When they were verified.' }),
  }).optional().meta({ description: 'The retrieved results.' }),
  estimatedCostUsd: usd.optional().meta({ description: 'Price per hour x lifetime of every pod of the run, all attempts (Runpod bills per second).' }),
  strayPods: z.array(z.string()).max(64).optional().meta({ description: 'Pods of this run not yet confirmed deleted.' }),
}).meta({ description: 'Written by the controller only.' });
export type RunpodRunStatus = z.output<typeof runpodRunStatus>;
