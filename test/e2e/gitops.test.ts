// GitOps health end to end: real runs (controller + simulated pods) through every phase, each
// version of each RunpodRun captured by a real kubectl watch, and every snapshot judged by Argo CD's
// health check (deploy/argocd/health.lua in Debian's lua5.4 and in gopher-lua, the interpreter Argo CD
// embeds) and by kstatus (cli-utils, as Flux and kpt use it). All must say what the run's facts call
// for (test/gitops/expected.ts).
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { kubectl } from '../support/kubectl.ts';
import { runManifest, withWorld } from '../support/operator.ts';
import { expectedHealth } from '../gitops/expected.ts';
import { goJudges, judgeWithArgoCdLua, judgeWithKstatus, judgeWithLua } from '../gitops/judges.ts';
import { watchRuns } from '../gitops/watch.ts';

const job = (script: string) => ({ job: { command: ['sh', '-c', script] }, results: { path: 'output' } });
const ended = (run: { status?: { phase?: string } }) => run.status?.phase === 'Succeeded' || run.status?.phase === 'Failed';

describe('GitOps health of real runs', () => {
  test('Argo CD\'s Lua check and kstatus judge every version of runs that succeed, fail, are cancelled and deleted; kubectl wait sees a spec change after the end', () =>
    withWorld('gitops', async (world) => {
      // The Go judges are built once per machine (a minute or two, cold): alongside the runs, not after them.
      const judgesReady = goJudges();
      await using watch = await watchRuns(world.namespace);
      await world.apply(runManifest('succeeds', job('mkdir -p output && echo ok > output/ok.txt')));
      await world.apply(runManifest('fails', job('mkdir -p output && echo partial > output/p.txt && exit 3')));
      await world.apply(runManifest('cancelled', job('mkdir -p output && echo early > output/e.txt && sleep 300')));
      await world.apply(runManifest('deleted', job('sleep 300')));

      await world.waitForRun('cancelled', 'JobRunning', (r) => r.status?.reason === 'JobRunning', 90_000);
      const patched = await kubectl(['patch', 'rpr', 'cancelled', '-n', world.namespace, '--type', 'merge', '-p', '{"spec":{"cancel":true}}']);
      assert.equal(patched.status, 0, patched.stderr);
      await world.waitForRun('deleted', 'JobRunning', (r) => r.status?.reason === 'JobRunning', 90_000);
      // Deleted while its pod runs: the finalizer holds the run until the pod is confirmed deleted.
      await world.deleteRun('deleted');
      await world.waitForRun('succeeds', 'ended', ended, 90_000);
      // A spec change after the end (keepPod is mutable) must be observed too, or Argo CD shows it Progressing for ever.
      const kept = await kubectl(['patch', 'rpr', 'succeeds', '-n', world.namespace, '--type', 'merge', '-p', '{"spec":{"keepPod":true}}']);
      assert.equal(kept.status, 0, kept.stderr);
      await world.waitForRun('succeeds', 'generation 2 observed', (r) => r.status?.observedGeneration === 2, 60_000);
      // kubectl wait ignores a condition whose observedGeneration is behind the run's generation.
      const waited = await kubectl(['wait', '--for=condition=Complete', 'rpr/succeeds', '-n', world.namespace, '--timeout=20s']);
      assert.equal(waited.status, 0, `kubectl wait after the keepPod change: ${waited.stderr}`);
      await world.waitForRun('fails', 'ended', ended, 90_000);
      await world.waitForRun('cancelled', 'Cancelled', (r) => r.status?.reason === 'Cancelled', 90_000);
      for (const name of ['succeeds', 'fails', 'cancelled']) await world.deleteRun(name);
      const snapshots = (await watch.stop()).map((event) => event.object);
      await judgesReady;

      const [lua, argo, kstatus] = await Promise.all([judgeWithLua(snapshots), judgeWithArgoCdLua(snapshots), judgeWithKstatus(snapshots)]);
      const rows = snapshots.map((run, i) => ({ run, expected: expectedHealth(run), lua: lua[i]!, argo: argo[i]!, kstatus: kstatus[i]! }));
      if (process.env.GITOPS_FIXTURES_DIR) writeFixtures(process.env.GITOPS_FIXTURES_DIR, rows.map((row) => ({ kind: row.expected.kind, run: row.run })));

      const table = new Map<string, string>();
      for (const { expected, lua: l, kstatus: k } of rows) table.set(expected.kind, `${l.status} / ${k.status}`);
      console.log([`${rows.length} snapshots; what the run is -> Argo CD health / kstatus`, ...[...table].map(([kind, verdict]) => `  ${kind} -> ${verdict}`)].join('\n'));

      const wrong = rows.filter((row) => row.lua.status !== row.expected.lua || row.kstatus.status !== row.expected.kstatus
        || row.argo.status !== row.lua.status || row.argo.message !== row.lua.message)
        .map((row) => `${row.run.metadata.name} (${row.expected.kind}): lua5.4 ${row.lua.status} "${row.lua.message}",`
          + ` gopher-lua ${row.argo.status} "${row.argo.message}", kstatus ${row.kstatus.status} "${row.kstatus.message}";`
          + ` want ${row.expected.lua} / ${row.expected.kstatus}; status ${JSON.stringify(row.run.status)}`);
      assert.deepEqual(wrong, [], 'every snapshot judged as the run\'s facts call for');

      // The runs went through every phase, and the watch saw each kind of moment.
      const kinds = new Set(rows.map((row) => row.expected.kind));
      for (const kind of ['no phase yet', 'Pending', 'Provisioning', 'Running', 'Retrieving', 'Succeeded', 'Failed/JobFailed', 'Failed/Cancelled', 'deleting']) {
        assert.ok(kinds.has(kind), `a snapshot of kind ${kind} (seen: ${[...kinds].join(', ')})`);
      }
      for (const kind of ['Running, generation not yet observed', 'Succeeded, generation not yet observed']) {
        assert.ok(kinds.has(kind), `the spec patch was seen before the controller observed it: ${kind}`);
      }
    }));
});

/** One snapshot per kind of moment, for test/gitops/fixtures (judged again without an API server). */
function writeFixtures(dir: string, rows: { kind: string; run: Record<string, any> }[]): void {
  mkdirSync(dir, { recursive: true });
  const seen = new Set<string>();
  for (const { kind, run } of rows) {
    if (seen.has(kind)) continue;
    seen.add(kind);
    const file = `${kind.replace(/[^A-Za-z0-9]+/g, '-').replace(/-+$/, '').toLowerCase()}.json`;
    // managedFields are bookkeeping of the API server that no health judge reads.
    const { managedFields: _, ...metadata } = run.metadata;
    writeFileSync(join(dir, file), `${JSON.stringify({ ...run, metadata }, null, 2)}\n`);
  }
}
