// Private images (config images.<image>.registryAuth): a pod whose create named no registry credential,
// or one whose username and password are not the image's, never gets its image. Runpod keeps such a
// pod (it was placed: its GPUs are held and it bills, API-NOTES §6 #3 "stuck in provisioning ... image
// pull") and keeps trying; the only word of it is in the pod's system log (API-NOTES 2026-12 addendum,
// part 2: "a refused private pull shows the registry's `unauthorized` ... text"): each try says
// `Pulling image`, the daemon's refusal, and when the next try comes, doubling from
// timings.pullBackoffMs up to 5 minutes. No container is created, so no port is ever assigned.
import type { SimConfig } from './config.ts';
import type { PodLog } from './podlog.ts';
import type { SimResources } from './resources.ts';
import type { PodRecord } from './state.ts';

const MAX_BACKOFF_MS = 300_000;

/** The repository as Docker names it in its errors (the reference without tag or digest) and its registry host. */
export function imageRepository(image: string): { name: string; host: string } {
  const name = image.split('@')[0] ?? image;
  const colon = name.lastIndexOf(':');
  const repository = colon > name.lastIndexOf('/') ? name.slice(0, colon) : name;
  const first = repository.split('/')[0] ?? '';
  const hasHost = repository.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  return { name: repository, host: hasHost ? first : 'registry-1.docker.io' };
}

/**
 * The Docker daemon's refusal of the pod's image, or null when it pulls: a public image, or a private
 * one with the registry credential (of the pod's account) whose username and password are the image's.
 */
export function pullRefusal(config: SimConfig, resources: SimResources, pod: PodRecord): string | null {
  const auth = config.images[pod.spec.image]?.registryAuth;
  if (!auth) return null;
  const { name, host } = imageRepository(pod.spec.image);
  const registry = pod.spec.registry === null ? undefined : resources.registry(pod.accountKey, pod.spec.registry);
  if (!registry) {
    return `Error response from daemon: pull access denied for ${name}, repository does not exist or may require 'docker login': denied: unauthorized`;
  }
  if (registry.username === auth.username && registry.password === auth.password) return null;
  return `Error response from daemon: Get "https://${host}/v2/": unauthorized: incorrect username or password`;
}

const delayText = (ms: number): string => (ms < 1000 ? `${ms}ms` : `${Math.round(ms / 100) / 10}s`);

/** The tries of a pull that is refused, until the pod is stopped or deleted (or stop() is called). */
export class RefusedPull {
  private readonly pod: PodRecord;
  private readonly log: PodLog;
  private readonly refusal: string;
  private readonly firstDelayMs: number;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(pod: PodRecord, log: PodLog, refusal: string, firstDelayMs: number) {
    this.pod = pod;
    this.log = log;
    this.refusal = refusal;
    this.firstDelayMs = firstDelayMs;
  }

  start(): void {
    this.attempt(1);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private attempt(n: number): void {
    this.timer = null;
    // A stopped pod pulls nothing; its `start` boots it again, and so a new pull (SimCore.boot).
    if (this.stopped || this.pod.deletedAt !== null || this.pod.status !== 'RUNNING') return;
    const image = this.pod.spec.image;
    this.log.system(`Pulling image ${image}`);
    this.log.system(this.refusal);
    const delay = Math.min(this.firstDelayMs * 2 ** Math.min(n - 1, 30), MAX_BACKOFF_MS);
    this.log.system(`Back-off pulling image "${image}": try ${n} failed, retrying in ${delayText(delay)}`);
    this.timer = setTimeout(() => this.attempt(n + 1), delay);
    this.timer.unref();
  }
}
