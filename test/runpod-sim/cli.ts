// `npm run sim -- --port P --api-key K [--api-key K2] [--config FILE]`: the simulator in the
// foreground; SIGINT/SIGTERM stop it and kill every pod.
import { parseArgs } from 'node:util';
import { loadConfigFile } from './config.ts';
import { startSimulator } from './server.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    'api-key': { type: 'string', multiple: true, default: [] },
    config: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});

if (values.help || values['api-key'].length === 0) {
  process.stderr.write('usage: npm run sim -- --port P --api-key K [--api-key K2] [--config FILE]\n');
  process.exit(values.help ? 0 : 2);
}

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`invalid --port ${values.port}\n`);
  process.exit(2);
}

const sim = await startSimulator({
  port,
  apiKeys: values['api-key'],
  ...(values.config === undefined ? {} : { config: loadConfigFile(values.config) }),
});
process.stdout.write(`Runpod simulator: ${sim.baseUrl}\nadmin: ${sim.adminUrl}\n`);

let stopping = false;
const shutdown = (signal: string): void => {
  if (stopping) return;
  stopping = true;
  process.stdout.write(`${signal}: stopping, killing every pod\n`);
  sim.stop().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`stop failed: ${String(error)}\n`);
      process.exit(1);
    },
  );
};
process.on('SIGINT', () => shutdown('SIGINT'));
process.on('SIGTERM', () => shutdown('SIGTERM'));
