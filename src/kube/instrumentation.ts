// What the runtime reports about itself, as plain interfaces: src/metrics implements them with
// prom-client, tests with arrays. The shapes follow client-go's workqueue MetricsProvider and
// controller-runtime's reconcile metrics, so that the exported series mean what their users expect.

export interface QueueObserver {
  /** A key became dirty (client-go counts every add that is not already waiting). */
  added(): void;
  /** A key was handed to a worker after waiting this long since it was added. */
  handedOut(queuedSeconds: number): void;
  /** A worker finished a key after this long. */
  finished(workSeconds: number): void;
  /** addRateLimited: a retry after a failure. */
  retried(): void;
}

/** controller-runtime's `result` label: requeue_after > 0, requeue = again at once. */
export type ReconcileResultLabel = 'success' | 'error' | 'requeue' | 'requeue_after';

export interface ControllerObserver {
  reconciled(result: ReconcileResultLabel, seconds: number, error?: 'terminal' | 'retried'): void;
}
