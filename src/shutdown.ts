// SIGINT / SIGTERM: the running controller stops (in-flight steps aborted, events flushed, the lease
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
