// The controller's Prometheus metrics (prom-client), on a registry of its own per controller
// instance. The runtime's series carry controller-runtime's names and labels (what dashboards for
// kubebuilder controllers already chart); ours are prefixed runpod_operator_. Labels are bounded
// and never carry a secret: controller names, route templates, HTTP codes, phases, namespaces.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RunpodRunStatus } from '../api/status.ts';
import type { ControllerObserver, QueueObserver } from '../kube/instrumentation.ts';
import type { InFlightReconcile } from '../kube/controller.ts';
import type { RunpodCallObserver } from '../runpod/index.ts';

/** What the scrape-time gauges read: the current leader's parts (nothing on a standby). */
export interface MetricSources {
  isLeader(): boolean;
  controllers(): readonly { name: string; maxConcurrentReconciles: number; queue: { len(): number }; inFlight(): InFlightReconcile[] }[];
  runs(): Iterable<{ namespace: string; status: RunpodRunStatus | undefined }>;
  /** Our pods in the accounts' last lists, by Runpod's desiredStatus. */
  pods(): Iterable<{ status: string | undefined }>;
}

const RUN_PHASES = ['Pending', 'Provisioning', 'Running', 'Retrieving', 'Succeeded', 'Failed'] as const;

// controller-runtime's pkg/internal/controller/metrics buckets.
const reconcileBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
  1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60];
// client-go workqueue: ExponentialBuckets(10e-9, 10, 12).
const queueBuckets = Array.from({ length: 12 }, (_, i) => 1e-8 * 10 ** i);

export class OperatorMetrics {
  readonly registry = new Registry();
  #sources: MetricSources | undefined;

  readonly #reconcileTotal: Counter<'controller' | 'result'>;
  readonly #reconcileErrors: Counter<'controller'>;
  readonly #terminalErrors: Counter<'controller'>;
  readonly #reconcileTime: Histogram<'controller'>;
  readonly #adds: Counter<'name' | 'controller'>;
  readonly #retries: Counter<'name' | 'controller'>;
  readonly #queueDuration: Histogram<'name' | 'controller'>;
  readonly #workDuration: Histogram<'name' | 'controller'>;
  readonly #runpodRequests: Counter<'endpoint' | 'status'>;
  readonly #rateLimitWaits: Counter<'cause'>;
  readonly #rateLimitWaitSeconds: Counter<'cause'>;
  readonly #strayPodsDeleted: Counter;
  readonly #overduePodsDeleted: Counter;
  readonly #sshConnections: Counter<'outcome'>;
  readonly #resultBytes: Counter;
  readonly #resultFiles: Counter;

  constructor() {
    const registers = [this.registry];
    const sources = (): MetricSources | undefined => this.#sources;
    collectDefaultMetrics({ register: this.registry });

    this.#reconcileTotal = new Counter({ name: 'controller_runtime_reconcile_total', help: 'Total number of reconciliations per controller', labelNames: ['controller', 'result'], registers });
    this.#reconcileErrors = new Counter({ name: 'controller_runtime_reconcile_errors_total', help: 'Total number of reconciliation errors per controller', labelNames: ['controller'], registers });
    this.#terminalErrors = new Counter({ name: 'controller_runtime_terminal_reconcile_errors_total', help: 'Total number of terminal reconciliation errors per controller', labelNames: ['controller'], registers });
    this.#reconcileTime = new Histogram({ name: 'controller_runtime_reconcile_time_seconds', help: 'Length of time per reconciliation per controller', labelNames: ['controller'], buckets: reconcileBuckets, registers });
    new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles', help: 'Maximum number of concurrent reconciles per controller', labelNames: ['controller'], registers,
      collect() { this.reset(); for (const c of sources()?.controllers() ?? []) this.set({ controller: c.name }, c.maxConcurrentReconciles); },
    });
    new Gauge({
      name: 'controller_runtime_active_workers', help: 'Number of currently used workers per controller', labelNames: ['controller'], registers,
      collect() { this.reset(); for (const c of sources()?.controllers() ?? []) this.set({ controller: c.name }, c.inFlight().length); },
    });

    const queueLabels = ['name', 'controller'] as const;
    new Gauge({
      name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames: queueLabels, registers,
      collect() { this.reset(); for (const c of sources()?.controllers() ?? []) this.set({ name: c.name, controller: c.name }, c.queue.len()); },
    });
    this.#adds = new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames: queueLabels, registers });
    this.#retries = new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames: queueLabels, registers });
    this.#queueDuration = new Histogram({ name: 'workqueue_queue_duration_seconds', help: 'How long in seconds an item stays in workqueue before being requested', labelNames: queueLabels, buckets: queueBuckets, registers });
    this.#workDuration = new Histogram({ name: 'workqueue_work_duration_seconds', help: 'How long in seconds processing an item from workqueue takes', labelNames: queueLabels, buckets: queueBuckets, registers });
    new Gauge({
      name: 'workqueue_unfinished_work_seconds', help: 'How many seconds of work has been done that is in progress and hasn\'t been observed by work_duration', labelNames: queueLabels, registers,
      collect() {
        this.reset();
        for (const c of sources()?.controllers() ?? []) this.set({ name: c.name, controller: c.name }, c.inFlight().reduce((sum, r) => sum + r.runningMs, 0) / 1000);
      },
    });
    new Gauge({
      name: 'workqueue_longest_running_processor_seconds', help: 'How many seconds has the longest running processor for workqueue been running', labelNames: queueLabels, registers,
      collect() { this.reset(); for (const c of sources()?.controllers() ?? []) this.set({ name: c.name, controller: c.name }, (c.inFlight()[0]?.runningMs ?? 0) / 1000); },
    });

    this.#runpodRequests = new Counter({ name: 'runpod_operator_runpod_requests_total', help: 'HTTP requests sent to Runpod, by route template and answer status (no_answer: none came)', labelNames: ['endpoint', 'status'], registers });
    this.#rateLimitWaits = new Counter({ name: 'runpod_operator_rate_limit_waits_total', help: 'Runpod calls that waited for the account request budget (budget) or for a 429 Retry-After (retry_after)', labelNames: ['cause'], registers });
    this.#rateLimitWaitSeconds = new Counter({ name: 'runpod_operator_rate_limit_wait_seconds_total', help: 'Seconds Runpod calls spent waiting for the account request budget', labelNames: ['cause'], registers });
    new Gauge({
      name: 'runpod_operator_pods', help: 'Pods of this cluster in the accounts\' last Runpod lists, by Runpod status (RUNNING, EXITED, ...)', labelNames: ['phase'], registers,
      collect() {
        this.reset();
        for (const phase of ['RUNNING', 'EXITED']) this.set({ phase }, 0);
        for (const pod of sources()?.pods() ?? []) this.inc({ phase: pod.status ?? 'UNKNOWN' });
      },
    });
    new Gauge({
      name: 'runpod_operator_runs', help: 'RunpodRuns by status.phase (New: not yet reconciled)', labelNames: ['phase'], registers,
      collect() {
        this.reset();
        for (const phase of RUN_PHASES) this.set({ phase }, 0);
        for (const run of sources()?.runs() ?? []) this.inc({ phase: run.status?.phase ?? 'New' });
      },
    });
    new Gauge({
      name: 'runpod_operator_estimated_spend_usd', help: 'Sum of status.estimatedCostUsd of the RunpodRuns that exist, per namespace', labelNames: ['namespace'], registers,
      collect() {
        this.reset();
        for (const run of sources()?.runs() ?? []) {
          const cost = Number(run.status?.estimatedCostUsd ?? 0);
          this.inc({ namespace: run.namespace }, Number.isFinite(cost) ? cost : 0);
        }
      },
    });
    this.#strayPodsDeleted = new Counter({ name: 'runpod_operator_stray_pods_deleted_total', help: 'Pods of this cluster whose run no longer exists that the sweeper deleted', registers });
    this.#overduePodsDeleted = new Counter({ name: 'runpod_operator_overdue_pods_deleted_total', help: 'Pods of this cluster past their deadline + --deadline-margin that the sweeper deleted from the pod list', registers });
    this.#sshConnections = new Counter({ name: 'runpod_operator_ssh_connections_total', help: 'SSH connections to pods, by outcome (ok, host_key_mismatch, failed)', labelNames: ['outcome'], registers });
    this.#resultBytes = new Counter({ name: 'runpod_operator_result_bytes_total', help: 'Bytes of verified results retrieved from pods', registers });
    this.#resultFiles = new Counter({ name: 'runpod_operator_result_files_total', help: 'Files of verified results retrieved from pods', registers });
    new Gauge({
      name: 'runpod_operator_leader', help: '1 on the replica that holds the leader lease, 0 on a standby', registers,
      collect() { this.set(sources()?.isLeader() ? 1 : 0); },
    });
  }

  setSources(sources: MetricSources): void {
    this.#sources = sources;
  }

  controllerObserver(controller: string): ControllerObserver {
    this.#reconcileTotal.inc({ controller, result: 'success' }, 0);
    this.#reconcileErrors.inc({ controller }, 0);
    return {
      reconciled: (result, seconds, error) => {
        this.#reconcileTotal.inc({ controller, result });
        this.#reconcileTime.observe({ controller }, seconds);
        if (error) this.#reconcileErrors.inc({ controller });
        if (error === 'terminal') this.#terminalErrors.inc({ controller });
      },
    };
  }

  queueObserver(name: string): QueueObserver {
    const labels = { name, controller: name };
    this.#adds.inc(labels, 0);
    this.#retries.inc(labels, 0);
    return {
      added: () => this.#adds.inc(labels),
      retried: () => this.#retries.inc(labels),
      handedOut: (seconds) => this.#queueDuration.observe(labels, seconds),
      finished: (seconds) => this.#workDuration.observe(labels, seconds),
    };
  }

  readonly runpod: RunpodCallObserver = {
    request: (endpoint, status) => this.#runpodRequests.inc({ endpoint, status }),
    rateLimitWait: (cause, seconds) => {
      this.#rateLimitWaits.inc({ cause });
      this.#rateLimitWaitSeconds.inc({ cause }, seconds);
    },
  };

  /** The sweeper deleted a pod: its run was gone (stray) or its deadline + margin had passed. */
  sweptPodDeleted(why: 'stray' | 'deadline'): void {
    (why === 'stray' ? this.#strayPodsDeleted : this.#overduePodsDeleted).inc();
  }

  sshConnection(outcome: 'ok' | 'host_key_mismatch' | 'failed'): void {
    this.#sshConnections.inc({ outcome });
  }

  resultsRetrieved(files: number, bytes: number): void {
    this.#resultFiles.inc(files);
    this.#resultBytes.inc(bytes);
  }

  /** The text exposition format. */
  async expose(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
