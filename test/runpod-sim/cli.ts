// `npm run sim -- --port P --api-key K [--api-key K2:pods:read,pods:write] [--config FILE]`: the
// simulator in the foreground; SIGINT/SIGTERM stop it and kill every pod. `KEY:SCOPE,SCOPE` gives a key
// only those scopes (config `keys`).
import { parseArgs } from 'node:util';
import { API_KEY_SCOPES, loadConfigFile, type ApiKeyScope, type SimConfigInput } from './config.ts';
import { startSimulator } from './server.ts';

/** Bad input: one sentence and exit 2, never a stack trace. */
const fail = (message: string): never => {
  process.stderr.write(`runpod-sim: ${message}\n`);
  process.exit(2);
};
const sentence = (error: unknown): string => (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';

const parsed = (() => {
  try {
    return parseArgs({
      options: {
        port: { type: 'string', default: '0' },
        'api-key': { type: 'string', multiple: true, default: [] },
        config: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    });
  } catch (error) {
    return fail(`${sentence(error).split('. ')[0] ?? ''} (--help lists the flags)`);
  }
})();
const { values } = parsed;

if (values.help || values['api-key'].length === 0) {
  process.stderr.write('usage: npm run sim -- --port P --api-key K[:SCOPE,...] [--api-key K2] [--config FILE]\n');
  process.exit(values.help ? 0 : 2);
}

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  fail(`invalid --port ${values.port}`);
}

const apiKeys: string[] = [];
const scopedKeys: { key: string; scopes: ApiKeyScope[] }[] = [];
for (const arg of values['api-key']) {
  // Scopes contain a colon themselves (pods:read): the key is everything before the first one.
  const at = arg.indexOf(':');
  if (at < 0) {
    apiKeys.push(arg);
    continue;
  }
  const scopes = arg.slice(at + 1).split(',').filter(Boolean);
  const unknown = scopes.filter((scope) => !(API_KEY_SCOPES as readonly string[]).includes(scope));
  if (unknown.length > 0) {
    fail(`unknown scope ${unknown.join(', ')} in --api-key (known: ${API_KEY_SCOPES.join(', ')})`);
  }
  apiKeys.push(arg.slice(0, at));
  scopedKeys.push({ key: arg.slice(0, at), scopes: scopes as ApiKeyScope[] });
}
const fileConfig: SimConfigInput = (() => {
  try {
    return values.config === undefined ? {} : loadConfigFile(values.config);
  } catch (error) {
    return fail(`--config: ${sentence(error)}`);
  }
})();
const sim = await startSimulator({
  port,
  apiKeys,
  config: { ...fileConfig, keys: [...(fileConfig.keys ?? []), ...scopedKeys] },
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
