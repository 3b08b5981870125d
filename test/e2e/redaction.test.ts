// Job secrets in what the controller writes, end to end: a failing job prints one line of a multi-line
// secret file; the JobFailed Event (events.k8s.io, on the real API server) carries [REDACTED] where the
// line was. Once that run has ended its secrets leave the redaction set, while a running run's stay.
// Ends with the leak check.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { registeredSecrets, releaseSecrets } from '../../src/log.ts';
import { kubectl } from '../support/kubectl.ts';
import { hasCondition, runManifest, withWorld } from '../support/operator.ts';
import { consistently, eventually, EVENTUALLY_MS } from '../support/eventually.ts';

const TOKEN_LINE = 'token: tok_e2e_7c41f09d2b3a8e65';
type World = Parameters<Parameters<typeof withWorld>[1]>[0];
const SECRET_FILE = `# service config\nendpoint: https://store.example\n${TOKEN_LINE}\nregion: eu\n`;

test('a failing job prints one line of a secret file: its JobFailed Event says [REDACTED]; the ended run\'s secrets are released, a running run\'s stay', () =>
  withWorld('redact', async (world) => {
    const created = await kubectl(['create', 'secret', 'generic', 'svc', '-n', world.namespace, `--from-literal=config.yaml=${SECRET_FILE}`]);
    assert.equal(created.status, 0, created.stderr);
    const files = [{ path: 'config.yaml', secretKeyRef: { name: 'svc', key: 'config.yaml' } }];
    await world.apply(runManifest('leaky', { job: { command: ['sh', '-c', 'echo "bad config:"; grep token config.yaml; exit 3'], files } }));
    await world.apply(runManifest('running', { job: { command: ['sleep', '600'], files } }));

    const failed = await world.waitForRun('leaky', 'Failed', (run) => run.status?.phase === 'Failed', 120_000);
    assert.equal(failed.status?.reason, 'JobFailed', JSON.stringify(failed.status));
    assertRedacted(await jobFailedNote(world, 'bad config'));
    assert.ok(!world.logLines.join('').includes('tok_e2e_7c41f09d2b3a8e65'), 'nor in any log line');

    const running = await world.waitForRun('running', 'Running', (run) => hasCondition(run, 'JobStarted'), 120_000);
    const leakyUid = failed.metadata.uid;
    await eventually('the ended run\'s secrets to be released', () => registeredSecrets(leakyUid) === 0);
    assert.ok(registeredSecrets(running.metadata.uid) > 0, 'the running run\'s stay');
    const released = registeredSecrets();
    // Resyncs of the ended run register nothing again.
    await kubectl(['annotate', 'rpr', 'leaky', '-n', world.namespace, 'example.com/poke=1']);
    await world.waitForRun('running', 'still running', (run) => run.status?.phase === 'Running');
    await consistently('nothing registered again for the finished run', () => registeredSecrets(leakyUid) === 0 && registeredSecrets() <= released, 1000);
    await world.deleteRun('running');
    await world.deleteRun('leaky');
  }));

test('a job started before the controller (re)started: its secrets are read again, so its JobFailed Event is redacted too', () =>
  withWorld('redact-restart', async (world) => {
    const created = await kubectl(['create', 'secret', 'generic', 'svc', '-n', world.namespace, `--from-literal=config.yaml=${SECRET_FILE}`]);
    assert.equal(created.status, 0, created.stderr);
    const files = [{ path: 'config.yaml', secretKeyRef: { name: 'svc', key: 'config.yaml' } }];
    await world.apply(runManifest('later', { job: { command: ['sh', '-c', 'sleep 8; echo "late config:"; grep token config.yaml; exit 3'], files } }));
    const started = await world.waitForRun('later', 'JobStarted', (run) => hasCondition(run, 'JobStarted'), 120_000);
    await world.stopController();
    // A new process starts with an empty redaction set.
    releaseSecrets(started.metadata.uid);
    await world.startController();
    const failed = await world.waitForRun('later', 'Failed', (run) => run.status?.phase === 'Failed', 120_000);
    assert.equal(failed.status?.reason, 'JobFailed', JSON.stringify(failed.status));
    assertRedacted(await jobFailedNote(world, 'late config'));
    await world.deleteRun('later');
  }));

async function jobFailedNote(world: World, marker: string): Promise<string> {
  let notes: string[] = [];
  try {
    return await eventually(`a JobFailed Event with "${marker}" in its log tail`, async () => {
      const events = JSON.parse((await kubectl(['get', 'events.events.k8s.io', '-n', world.namespace, '-o', 'json'])).stdout) as { items: { reason?: string; note?: string }[] };
      notes = events.items.filter((event) => event.reason === 'JobFailed').map((event) => event.note ?? '');
      return notes.find((text) => text.includes(marker));
    }, EVENTUALLY_MS, 250);
  } catch (error) {
    return assert.fail(`${(error as Error).message}: ${JSON.stringify(notes)}`);
  }
}

function assertRedacted(note: string): void {
  assert.ok(!note.includes('tok_e2e_7c41f09d2b3a8e65'), note);
  assert.match(note, /config:\n\[REDACTED\]/);
}
