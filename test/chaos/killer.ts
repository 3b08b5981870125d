// Kills the controller (SIGKILL) at the moments the schedule names and starts it again. A window
// kill waits for its moment: the proxy holds the controller's create or delete at the exact point,
// the result store and the pod's own files show a retrieval in progress and its marker, and a run's
// status shows a failed try counted (Retrying) before the next try's pod.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { podPath } from '../../src/pod/index.ts';
import { injectFault, simPods, simPodsWithProcesses } from '../runpod-sim/client.ts';
import type { ControllerProcess } from './controller.ts';
import type { Answer, Exchange, Handler } from './proxy.ts';
import type { RunBook } from './runbook.ts';
import type { RunpodRunStatus } from '../../src/api/status.ts';
import type { PlannedKill } from './schedule.ts';

export interface KillRecord {
  planned: PlannedKill;
  /** The window's moment came and the kill landed in it (random kills: always). */
  hit: boolean;
  /** From the session's start. */
  atMs?: number;
  run?: string;
  detail: string;
}

export interface KillerOptions {
  controller: ControllerProcess;
  runs: RunBook;
  adminUrl: string;
  /** `<results-dir>/<namespace>`: where each run's result directory is. */
  resultsRoot: string;
  /** Milliseconds since the session started. */
  elapsed: () => number;
  /** How long a window kill waits for its moment before it is given up (the kill then lands at once). */
  windowTimeoutMs: number;
}

/** Windows the proxy's hook finds: pre-retry's first moment (the failed try's DELETE) too. */
const isProxyWindow = (kill: PlannedKill): boolean =>
  kill.window === 'pre-post' || kill.window === 'post-create' || kill.window === 'mid-delete' || (kill.window === 'pre-retry' && !kill.deleteSent);
const podIdPattern = /^\/v2\/pods\/([^/?]+)$/;

export class Killer {
  readonly records: KillRecord[] = [];
  #options: KillerOptions;
  /** The proxy window armed now, and how to report its hit. */
  #armed: { kill: PlannedKill; hit: (run: string | undefined, detail: string) => void } | undefined;

  constructor(options: KillerOptions) {
    this.#options = options;
  }

  /** Plugged into the proxy: every controller call to Runpod passes here. */
  readonly handle: Handler = async (exchange, forward) => {
    const armed = this.#armed;
    if (!armed || !this.#options.controller.running) return forward();
    const window = armed.kill.window;
    const path = exchange.path.split('?')[0] ?? '';
    if ((window === 'pre-post' || window === 'post-create') && exchange.method === 'POST' && path === '/v2/pods') {
      const podName = createName(exchange);
      const run = podName.replace(/-\d+$/, '');
      if (window === 'pre-post') {
        this.#armed = undefined;
        const attempt = (await this.#options.runs.get(run))?.status?.attempts?.find((a) => a.name === podName);
        await this.#options.controller.kill();
        armed.hit(run, `POST /v2/pods for ${podName} held and dropped; attempt in status before it: ${attempt ? attempt.outcome : 'NO'}`);
        return 'drop';
      }
      const answer = await forward();
      // Only a create that made a pod is this window; another (capacity, a fault) goes through and the window stays armed.
      if (answer.status !== 201 || this.#armed !== armed) return answer;
      this.#armed = undefined;
      await this.#options.controller.kill();
      armed.hit(run, `POST /v2/pods for ${podName} created ${podIdOf(answer) ?? '?'}; the answer never reached the controller`);
      return 'drop';
    }
    const deleting = podIdPattern.exec(path);
    if (window === 'pre-retry' && exchange.method === 'DELETE' && deleting) {
      // Only the delete of a try that failed and was counted: the run says Retrying and this is its pod, marked Deleting.
      const podId = deleting[1]!;
      const pod = (await simPods(this.#options.adminUrl).catch(() => [])).find((p) => p.id === podId);
      const run = this.#options.runs.byUid(pod?.env.RUNPOD_OPERATOR_RUN ?? '')?.planned.name;
      const status = run === undefined ? undefined : (await this.#options.runs.get(run))?.status;
      if (!status || !retryingWith(status, podId) || this.#armed !== armed || !this.#options.controller.running) return forward();
      this.#armed = undefined;
      await this.#options.controller.kill();
      armed.hit(run, `${retryStory(status)}; DELETE /v2/pods/${podId} (${pod?.deletedAt === null ? 'alive' : 'already gone'} in Runpod) held and dropped before Runpod saw it`);
      return 'drop';
    }
    if (window === 'mid-delete' && exchange.method === 'DELETE' && deleting) {
      this.#armed = undefined;
      const podId = deleting[1]!;
      const run = await this.#runOfPod(podId);
      let detail = `DELETE /v2/pods/${podId} dropped before Runpod saw it`;
      if (armed.kill.deleteSent) {
        const answer = await forward();
        detail = `DELETE /v2/pods/${podId} answered ${answer.status}; the answer never reached the controller`;
      }
      await this.#options.controller.kill();
      armed.hit(run, detail);
      return 'drop';
    }
    return forward();
  };

  async execute(kill: PlannedKill): Promise<void> {
    const { controller, elapsed, windowTimeoutMs } = this.#options;
    let record: KillRecord;
    if (kill.window === 'random') {
      await controller.kill();
      record = { planned: kill, hit: true, atMs: elapsed(), detail: 'at a random moment' };
    } else {
      const found = await this.#waitForWindow(kill, windowTimeoutMs);
      if (found) record = { planned: kill, hit: true, atMs: elapsed(), run: found.run, detail: found.detail };
      else {
        await controller.kill();
        record = { planned: kill, hit: false, atMs: elapsed(), detail: `window not reached within ${windowTimeoutMs / 1000}s; killed at that moment instead` };
      }
    }
    this.records.push(record);
    await sleep(kill.restartAfterMs);
    if (kill.refusedFirstLists > 0) {
      // Armed before the start: the new leader's first pod lists (its sweep's, its observers') meet a 401.
      await injectFault(this.#options.adminUrl, { fault: 'refuse', status: 401, method: 'GET', path: '/v2/pods', count: kill.refusedFirstLists });
      record.detail += `; the new leader's first ${kill.refusedFirstLists} pod lists refused (401)`;
    }
    controller.start();
  }

  async #waitForWindow(kill: PlannedKill, timeoutMs: number): Promise<{ run: string | undefined; detail: string } | undefined> {
    const until = Date.now() + timeoutMs;
    if (isProxyWindow(kill)) {
      const hit = new Promise<{ run: string | undefined; detail: string }>((resolve) => {
        this.#armed = { kill, hit: (run, detail) => resolve({ run, detail }) };
      });
      const timedOut = sleep(timeoutMs).then(() => undefined);
      const found = await Promise.race([hit, timedOut]);
      this.#armed = undefined;
      return found;
    }
    if (kill.window === 'pre-retry') return this.#watchBackoff(until);
    return kill.window === 'mid-retrieval' ? this.#watchRetrieval(until) : this.#watchMarker(until);
  }

  /**
   * A run whose status says Retrying, whose failed try's pod is confirmed deleted and whose next try has
   * no attempt yet: it waits out its backoff (nextTryAfter), the next create not sent.
   */
  async #watchBackoff(until: number): Promise<{ run: string; detail: string } | undefined> {
    while (Date.now() < until) {
      const listed = await this.#options.runs.list().catch(() => []);
      const waiting = listed.find((run) => run.status && !run.metadata.deletionTimestamp && inBackoff(run.status));
      if (waiting?.status && this.#options.controller.running) {
        await this.#options.controller.kill();
        const run = waiting.metadata.name ?? '?';
        const uid = waiting.metadata.uid;
        const alive = (await simPods(this.#options.adminUrl).catch(() => [])).filter((pod) => pod.env.RUNPOD_OPERATOR_RUN === uid && pod.deletedAt === null);
        const left = Date.parse(waiting.status.nextTryAfter ?? '') - Date.now();
        const backoff = Number.isFinite(left) ? `${left > 0 ? `${Math.round(left / 100) / 10} s before` : `${Math.round(-left / 100) / 10} s after`} nextTryAfter` : 'no nextTryAfter';
        return { run, detail: `${retryStory(waiting.status)}; killed in the backoff (${backoff}), its pod confirmed deleted; pods of the run alive at the kill: ${alive.map((pod) => pod.id).join(', ') || 'none'}` };
      }
      await sleep(200);
    }
    return undefined;
  }

  /** A staging directory beside a run's result location: files are being copied right now. */
  async #watchRetrieval(until: number): Promise<{ run: string; detail: string } | undefined> {
    while (Date.now() < until) {
      for (const entry of this.#retrievingRuns()) {
        const dir = join(this.#options.resultsRoot, entry.planned.name);
        const staging = existsSync(dir) ? readdirSync(dir).find((name) => name.startsWith(`${entry.uid}.partial-`)) : undefined;
        if (staging && this.#options.controller.running) {
          await this.#options.controller.kill();
          return { run: entry.planned.name, detail: `killed while ${staging} was being filled` };
        }
      }
      await sleep(10);
    }
    return undefined;
  }

  /** The pod has its retrieved marker (read through /proc/<pid>/root of one of its processes) and the status does not say retrieved. */
  async #watchMarker(until: number): Promise<{ run: string; detail: string } | undefined> {
    let candidates: { run: string; uid: string; marker: string }[] = [];
    let refreshedAt = 0;
    while (Date.now() < until) {
      if (Date.now() - refreshedAt > 500) {
        refreshedAt = Date.now();
        candidates = await this.#markerPaths();
      }
      for (const candidate of candidates) {
        if (existsSync(candidate.marker) && this.#options.controller.running) {
          await this.#options.controller.kill();
          const status = (await this.#options.runs.get(candidate.run))?.status;
          return { run: candidate.run, detail: `killed once the pod had its retrieved marker; status said retrieved: ${status?.results?.retrievedAt ? 'yes (too late)' : 'no'}` };
        }
      }
      await sleep(5);
    }
    return undefined;
  }

  #retrievingRuns() {
    return [...this.#options.runs.entries.values()].filter((entry) =>
      entry.uid && !entry.gone && entry.latest?.status?.job?.exitCode !== undefined && !entry.latest.status.results?.retrievedAt);
  }

  async #markerPaths(): Promise<{ run: string; uid: string; marker: string }[]> {
    const wanted = new Map(this.#retrievingRuns().map((entry) => [entry.uid!, entry.planned.name]));
    if (wanted.size === 0) return [];
    const pods = await simPodsWithProcesses(this.#options.adminUrl).catch(() => []);
    const out: { run: string; uid: string; marker: string }[] = [];
    for (const pod of pods) {
      const uid = pod.env.RUNPOD_OPERATOR_RUN;
      const run = uid ? wanted.get(uid) : undefined;
      if (!uid || !run || pod.deletedAt !== null) continue;
      // The state directory is on the container's disk: only the container's own processes see it.
      const stateDir = pod.env.RUNPOD_OPERATOR_STATE_DIR;
      if (!stateDir) continue;
      for (const proc of pod.processes) {
        const root = `/proc/${proc.pid}/root`;
        if (existsSync(join(root, stateDir))) {
          out.push({ run, uid, marker: join(root, podPath(stateDir, 'retrieved')) });
          break;
        }
      }
    }
    return out;
  }

  async #runOfPod(podId: string): Promise<string | undefined> {
    const pod = (await simPods(this.#options.adminUrl).catch(() => [])).find((p) => p.id === podId);
    const uid = pod?.env.RUNPOD_OPERATOR_RUN;
    return uid ? this.#options.runs.byUid(uid)?.planned.name : undefined;
  }
}

/** The run counted a failed try (Retrying) and `podId` is that try's pod, marked for deletion, with no attempt of the next try yet. */
export function retryingWith(status: RunpodRunStatus, podId: string): boolean {
  return status.reason === 'Retrying' && status.pod?.id === podId && status.pod.state === 'Deleting' && attemptsOfTry(status, currentTry(status)) === 0;
}

/** The run counted a failed try (Retrying), its pod is confirmed deleted (no stray either), the next try has no attempt yet. */
export function inBackoff(status: RunpodRunStatus): boolean {
  return status.reason === 'Retrying' && (status.retries ?? 0) > 0 && status.pod?.state === 'Deleted' && !status.strayPods?.length
    && attemptsOfTry(status, currentTry(status)) === 0;
}

const currentTry = (status: RunpodRunStatus): number => (status.retries ?? 0) + 1;
const attemptsOfTry = (status: RunpodRunStatus, n: number): number => (status.attempts ?? []).filter((a) => (a.try ?? 1) === n).length;

function retryStory(status: RunpodRunStatus): string {
  const n = currentTry(status);
  return `status said Retrying (retries ${status.retries ?? 0}, try ${n - 1}'s pod ${status.pod?.id ?? '?'} ${status.pod?.state ?? '?'}, no attempt of try ${n} yet)`;
}

function createName(exchange: Exchange): string {
  try {
    const body = JSON.parse(exchange.body.toString('utf8')) as { name?: unknown };
    return typeof body.name === 'string' ? body.name : '?';
  } catch {
    return '?';
  }
}

function podIdOf(answer: Answer): string | undefined {
  try {
    const body = JSON.parse(answer.body.toString('utf8')) as { id?: unknown };
    return typeof body.id === 'string' ? body.id : undefined;
  } catch {
    return undefined;
  }
}
