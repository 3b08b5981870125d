// Every version of every RunpodRun in a namespace, as the real kubectl watch prints them
// (`kubectl get rpr -w -o json --output-watch-events`, one line per event): the snapshots the health judges are run on.
import { spawn } from 'node:child_process';
import { testCluster } from '../support/cluster.ts';

export interface WatchEvent { type: string; object: Record<string, any> }

export interface RunWatch {
  events: WatchEvent[];
  /** Ends the watch (again is harmless) and returns every event seen. */
  stop(): Promise<WatchEvent[]>;
  /** `await using watch = ...`: no kubectl is left running when the test fails midway. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Resolves once the watch request is open (kubectl -v=6 logs it), so no later change is missed. */
export async function watchRuns(namespace: string, timeoutMs = 30_000): Promise<RunWatch> {
  const { kubeconfigPath } = await testCluster();
  const child = spawn('kubectl', [
    '--kubeconfig', kubeconfigPath, '-n', namespace, 'get', 'runpodruns', '--watch', '-o', 'json', '--output-watch-events', '-v=6',
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  const events: WatchEvent[] = [];
  let stderr = '';
  let partial = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    // With --output-watch-events, kubectl prints each event as one line of compact JSON.
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (line.trim()) events.push(JSON.parse(line) as WatchEvent);
  });
  const closed = new Promise<void>((done) => child.once('close', () => done()));
  await new Promise<void>((open, fail) => {
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      fail(new Error(`kubectl watch did not open in ${timeoutMs} ms: ${stderr}`));
    }, timeoutMs);
    child.once('error', fail);
    child.once('close', (code) => fail(new Error(`kubectl watch exited ${code}: ${stderr}`)));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      if (/watch=true\S* 200 OK/.test(stderr)) {
        clearTimeout(timer);
        open();
      }
    });
  });
  let stopped: Promise<WatchEvent[]> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      child.kill('SIGTERM');
      await closed;
      if (partial.trim()) events.push(JSON.parse(partial) as WatchEvent);
      return events;
    })();
    return stopped;
  };
  return { events, stop, [Symbol.asyncDispose]: async () => { await stop(); } };
}

