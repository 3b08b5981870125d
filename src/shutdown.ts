// How the process ends. SIGINT / SIGTERM: the running controller stops (in-flight steps aborted, events flushed, the lease
// released), then the process exits; within `timeoutMs` whatever hangs, since kubelet's SIGKILL at the
// end of the pod's termination grace would skip the release.
import type { Logger } from './log.ts';

export function stopOnSignals(running: { stop(): Promise<void> }, timeoutMs: number, logger: Logger): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      logger.info({ signal, timeoutMs }, 'stopping');
      setTimeout(() => {
        logger.error('graceful shutdown did not finish in time; exiting anyway');
        process.exit(1);
      }, timeoutMs).unref();
      void running.stop().then(() => {
        logger.info('stopped');
        process.exit(0);
      }, (error: unknown) => {
        logger.error({ err: error }, 'graceful shutdown failed');
        process.exit(1);
      });
    });
  }
}

/** An error and its causes in one line ("fetch failed: connect ECONNREFUSED 127.0.0.1:6443"), for a person. */
export function oneLine(error: unknown): string {
  const parts: string[] = [];
  for (let at: unknown = error, depth = 0; at !== undefined && depth < 5; depth++) {
    const message = at instanceof Error ? at.message : typeof at === 'string' ? at : JSON.stringify(at);
    if (message && !parts.some((part) => part.includes(message))) parts.push(message.split('\n')[0] ?? message);
    at = at instanceof Error ? at.cause : undefined;
  }
  return parts.join(': ');
}
