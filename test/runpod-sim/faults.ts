// Injected faults, armed by POST /_sim/faults and consumed one firing at a time.
import { z } from 'zod';

const count = z.number().int().positive().default(1);
const method = z.string().min(1).transform((m) => m.toUpperCase()).optional();
/** A path template as /_sim/stats reports it, e.g. "/v2/pods/{id}". */
const path = z.string().startsWith('/').optional();
/** Only the first page of a list (no `cursor` query) or only the pages after it (with one). */
const pages = z.enum(['first', 'later']).optional();
const errorStatus = z.union([z.literal(500), z.literal(502), z.literal(503), z.literal(504)]);

export const faultSchema = z.discriminatedUnion('fault', [
  z.strictObject({ fault: z.literal('no-capacity'), count, gpuTypeId: z.string().min(1).optional() }),
  z.strictObject({ fault: z.literal('create-ambiguous'), count, status: errorStatus.default(500) }),
  z.strictObject({ fault: z.literal('create-timeout'), count }),
  z.strictObject({ fault: z.literal('http-5xx'), count, method, path, pages, status: errorStatus.default(500) }),
  z.strictObject({ fault: z.literal('rate-limit'), count, method, path, pages, retryAfterSeconds: z.number().int().nonnegative().default(1) }),
  // Runpod refusing the key for a while (a blip after a restart, a failover, a key rotation).
  z.strictObject({ fault: z.literal('refuse'), count, method, path, pages, status: z.union([z.literal(401), z.literal(403)]) }),
  z.strictObject({ fault: z.literal('not-found-flap'), count, podId: z.string().min(1) }),
  z.strictObject({ fault: z.literal('vanish'), count, podId: z.string().min(1), afterMs: z.number().int().nonnegative().default(0) }),
  z.strictObject({ fault: z.literal('slow-boot'), count, delayMs: z.number().int().nonnegative() }),
  // A slow network between the pod and the controller: long transfers (large results) take long.
  z.strictObject({ fault: z.literal('slow-link'), count, podId: z.string().min(1), bytesPerSecond: z.number().int().positive() }),
  // The pod's host clock is off (community hosts): every `date` the pod runs reads this many seconds off.
  z.strictObject({ fault: z.literal('clock-skew'), count, podId: z.string().min(1), offsetSeconds: z.number().int().min(-864_000).max(864_000) }),
  // The container's main process ends on its own. RUNNING: Runpod restarts it (a restart loop when
  // repeated, API-NOTES §4.1); EXITED or ERROR: the pod stays so (openapi-v2.json PodStatus), billing its disk.
  z.strictObject({
    fault: z.literal('container-exit'), count, podId: z.string().min(1),
    status: z.enum(['RUNNING', 'EXITED', 'ERROR']).default('RUNNING'), afterMs: z.number().int().nonnegative().default(0),
  }),
]);

export type Fault = z.output<typeof faultSchema>;
/** A fault as POST /_sim/faults accepts it (count and the other defaults may be left out). */
export type FaultInput = z.input<typeof faultSchema>;
export type FaultName = Fault['fault'];
type FaultOf<N extends FaultName> = Extract<Fault, { fault: N }>;

interface Armed {
  fault: Fault;
  remaining: number;
}

export class FaultQueue {
  private readonly armed: Armed[] = [];

  arm(fault: Fault): void {
    this.armed.push({ fault, remaining: fault.count });
  }

  /** Consumes one firing of the first armed fault `name` that `applies`; returns it, or undefined. */
  take<N extends FaultName>(name: N, applies: (fault: FaultOf<N>) => boolean = () => true): FaultOf<N> | undefined {
    const index = this.armed.findIndex((entry) => entry.fault.fault === name && applies(entry.fault as FaultOf<N>));
    const entry = this.armed[index];
    if (!entry) return undefined;
    entry.remaining -= 1;
    if (entry.remaining <= 0) this.armed.splice(index, 1);
    return entry.fault as FaultOf<N>;
  }

  pending(): { fault: Fault; remaining: number }[] {
    return this.armed.map((entry) => ({ fault: entry.fault, remaining: entry.remaining }));
  }

  clear(): void {
    this.armed.length = 0;
  }
}

/** Whether a request-level fault (http-5xx, rate-limit, refuse) with optional filters matches a request. */
export function matchesRequest(
  fault: { method?: string | undefined; path?: string | undefined; pages?: 'first' | 'later' | undefined },
  requestMethod: string, template: string, query: URLSearchParams,
): boolean {
  const page = query.has('cursor') ? 'later' : 'first';
  return (fault.method === undefined || fault.method === requestMethod) && (fault.path === undefined || fault.path === template)
    && (fault.pages === undefined || fault.pages === page);
}
