// The controller as its own process, for the chaos suite to SIGKILL and start again: src/main.ts's
// CLI, except that pods are told the simulator's own URL (CHAOS_POD_API_URL) while the controller
// talks to Runpod through the suite's proxy (--runpod-api-url), which pods could not reach.
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { startController } from '../../src/main.ts';

const config = loadConfig(process.argv.slice(2));
const logger = createLogger(config.logLevel);
const podApiUrl = process.env.CHAOS_POD_API_URL;
const running = await startController(config, { logger, ...(podApiUrl ? { podApiUrl } : {}) });
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => { void running.stop().then(() => process.exit(0)); });
}
