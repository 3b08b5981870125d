// Helpers for tests anywhere in the project: read the simulator's admin API, inject faults, and the
// leak check every test that creates pods ends with.
import { z } from 'zod';
import type { FaultInput } from './faults.ts';

export type { FaultInput } from './faults.ts';

const procSchema = z.object({ pid: z.number(), command: z.string(), rssKb: z.number() });

const simPodSchema = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(['RUNNING', 'EXITED', 'ERROR', 'TERMINATED']),
  env: z.record(z.string(), z.string()),
  gpuTypeId: z.string(),
  gpuCount: z.number(),
  costPerHr: z.number(),
  dataCenterId: z.string(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  deletedAt: z.string().nullable(),
  deletedBy: z.enum(['account', 'pod', 'vanished']).nullable(),
  restarts: z.number(),
  sshPort: z.number().nullable(),
  ready: z.boolean(),
  podApiKey: z.string(),
  clockOffsetSeconds: z.number(),
});
const simPodWithProcessesSchema = simPodSchema.extend({ processes: z.array(procSchema) });

const statsSchema = z.object({
  requests: z.array(
    z.object({ caller: z.enum(['account', 'pod', 'anonymous']), method: z.string(), path: z.string(), status: z.number(), count: z.number() }),
  ),
  total: z.number(),
});

export type SimPod = z.infer<typeof simPodSchema>;
export type SimPodWithProcesses = z.infer<typeof simPodWithProcessesSchema>;
export type SimStats = z.infer<typeof statsSchema>;

async function getJson(url: string): Promise<unknown> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** Every pod the simulator ever created, alive or deleted. */
export async function simPods(adminUrl: string): Promise<SimPod[]> {
  return z.object({ pods: z.array(simPodSchema) }).parse(await getJson(`${adminUrl}/pods`)).pods;
}

/** Every pod with the processes it still has on the machine (a scan of /proc: for leak checks, not for polling a state). */
export async function simPodsWithProcesses(adminUrl: string): Promise<SimPodWithProcesses[]> {
  return z.object({ pods: z.array(simPodWithProcessesSchema) }).parse(await getJson(`${adminUrl}/pods?processes=1`)).pods;
}

export async function simStats(adminUrl: string): Promise<SimStats> {
  return statsSchema.parse(await getJson(`${adminUrl}/stats`));
}

/** Requests counted for one method and path template (e.g. "GET", "/v2/pods/{id}"), optionally one status. */
export function countRequests(stats: SimStats, method: string, path: string, status?: number): number {
  return stats.requests
    .filter((entry) => entry.method === method && entry.path === path && (status === undefined || entry.status === status))
    .reduce((sum, entry) => sum + entry.count, 0);
}

export async function simPodLogs(adminUrl: string, podId: string): Promise<string> {
  const response = await fetch(`${adminUrl}/pods/${encodeURIComponent(podId)}/logs`);
  return response.text();
}

const logEventSchema = z.object({ ts: z.string(), source: z.enum(['container', 'system']), line: z.string() });
export type PodLogEvent = z.infer<typeof logEventSchema>;

/**
 * Reads GET /v2/pods/{id}/logs (which never ends by itself) until a line matches `until`, then hangs
 * up and returns every event read; fails after `timeoutMs` naming what it saw. `query` as the API
 * takes it, e.g. "source=container&tail=5000".
 */
export async function podLogUntil(baseUrl: string, key: string, podId: string, query: string, until: RegExp, timeoutMs = 60_000): Promise<PodLogEvent[]> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  const events: PodLogEvent[] = [];
  let text = '';
  try {
    const response = await fetch(`${baseUrl}/pods/${encodeURIComponent(podId)}/logs?${query}`, { headers: { Authorization: `Bearer ${key}` }, signal: abort.signal });
    if (response.status !== 200 || !response.body) throw new Error(`GET logs of ${podId}: ${response.status} ${await response.text()}`);
    const decoder = new TextDecoder();
    for await (const chunk of response.body) {
      text += decoder.decode(chunk, { stream: true });
      const blocks = text.split('\n\n');
      text = blocks.pop() ?? '';
      for (const block of blocks) {
        const data = block.split('\n').find((line) => line.startsWith('data: '));
        if (data !== undefined) events.push(logEventSchema.parse(JSON.parse(data.slice(6))));
      }
      if (events.some((event) => until.test(event.line))) return events;
    }
    throw new Error(`the log of ${podId} ended without a line matching ${String(until)}`);
  } catch (error) {
    if (!abort.signal.aborted) throw error;
    throw new Error(`no line matching ${String(until)} in the log of ${podId} within ${timeoutMs} ms; saw:\n${events.map((event) => `${event.source}: ${event.line}`).join('\n')}`);
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

export async function injectFault(adminUrl: string, fault: FaultInput): Promise<void> {
  const response = await fetch(`${adminUrl}/faults`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(fault),
  });
  if (!response.ok) throw new Error(`injecting ${fault.fault}: ${response.status} ${await response.text()}`);
}

/** The account key stops authenticating, as when it is deleted in the console (401 from then on). */
export async function revokeSimKey(adminUrl: string, key: string): Promise<void> {
  const response = await fetch(`${adminUrl}/keys/${encodeURIComponent(key)}`, { method: 'DELETE' });
  if (!response.ok) throw new Error(`revoke key: ${response.status} ${await response.text()}`);
}

/**
 * Throws, listing them, if any pod is still alive or any process of a deleted pod is still on the
 * machine. Processes get `graceMs` to go (a delete already waits for them; a delayed vanish may not).
 */
export async function assertNoLeaks(adminUrl: string, graceMs = 2000): Promise<void> {
  const deadline = Date.now() + graceMs;
  for (;;) {
    const pods = await simPodsWithProcesses(adminUrl);
    const alive = pods.filter((pod) => pod.deletedAt === null);
    if (alive.length > 0) {
      throw new Error(`pods left alive: ${alive.map((pod) => `${pod.id} (${pod.name}, ${pod.status})`).join(', ')}`);
    }
    const leaking = pods.filter((pod) => pod.processes.length > 0);
    if (leaking.length === 0) return;
    if (Date.now() >= deadline) {
      const lines = leaking.flatMap((pod) => pod.processes.map((proc) => `${pod.id}: pid ${proc.pid} ${proc.command.slice(0, 120)}`));
      throw new Error(`processes of deleted pods left on the machine:\n${lines.join('\n')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
