// Where this machine's CPU went over a stretch, by party: the controller (this process, with the
// bench's own watch), the simulator and its pods (every descendant of its process), the API server,
// etcd, kubectl, and the rest. From /proc: each process's own time and its reaped children's, so a
// short-lived process (a pod's shell, a kubectl) counts with its parent once it has ended.
import { readdirSync, readFileSync } from 'node:fs';

interface ProcessTimes { pid: number; ppid: number; comm: string; seconds: number; reapedSeconds: number }

function processes(): ProcessTimes[] {
  const found: ProcessTimes[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    // pid (comm) state ppid ... utime(14) stime(15) cutime(16) cstime(17), in clock ticks (100 a second)
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const fields = stat.slice(close + 2).split(' ');
    const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(fields[i] ?? 0) / 100) as [number, number, number, number];
    found.push({ pid: Number(entry), ppid: Number(fields[1]), comm, seconds: utime + stime + cutime + cstime, reapedSeconds: cutime + cstime });
  }
  return found;
}

/** CPU seconds used so far, by party (cpuShares gives a stretch's, between two readings). */
export function cpuByParty(simPid: number): Map<string, number> {
  const all = processes();
  const parent = new Map(all.map((p) => [p.pid, p.ppid]));
  const underSim = (pid: number): boolean => {
    for (let at: number | undefined = pid; at !== undefined && at > 1; at = parent.get(at)) if (at === simPid) return true;
    return false;
  };
  const totals = new Map<string, number>();
  for (const p of all) {
    if (p.pid === process.pid) {
      // Its own time; its reaped children are the kubectl calls it made.
      totals.set('controller (this process)', p.seconds - p.reapedSeconds);
      totals.set('kubectl', (totals.get('kubectl') ?? 0) + p.reapedSeconds);
      continue;
    }
    const party = underSim(p.pid) ? 'simulator and its pods' : ['kube-apiserver', 'etcd', 'kubectl'].includes(p.comm) ? p.comm : 'the rest';
    totals.set(party, (totals.get(party) ?? 0) + p.seconds);
  }
  return totals;
}

/** Each party's seconds between two readings, largest first, as "party 1.2 s (40 %)". */
export function cpuShares(before: Map<string, number>, after: Map<string, number>): string {
  const used = [...after].map(([party, s]) => [party, Math.max(0, s - (before.get(party) ?? 0))] as const).sort((a, b) => b[1] - a[1]);
  const total = used.reduce((sum, [, s]) => sum + s, 0);
  return used.filter(([, s]) => s >= 0.05).map(([party, s]) => `${party} ${s.toFixed(1)} s (${Math.round((100 * s) / total)} %)`).join(', ');
}
