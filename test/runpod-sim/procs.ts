// Finds a pod's processes on the machine by its network namespace: every process of a pod (the
// container, whatever it spawned, sshd sessions, the port relays) lives in it, and nothing else does.
// A namespace's inode number goes to the next namespace made once it is freed, so the simulator holds
// each pod's namespace open (pods.ts) for as long as it looks into it. Start times cannot tell a later
// pod apart: its holder may be forked before a pod's delete and make its namespaces after it.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface ProcInfo {
  pid: number;
  command: string;
  rssKb: number;
}

export function netNamespace(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return null;
  }
}

function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command may hold spaces and parentheses: fields are counted after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

function describe(pid: number): ProcInfo | null {
  try {
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return { pid, command, rssKb: rss ? Number(rss[1]) : 0 };
  } catch {
    return null;
  }
}

/** Live (non-zombie) processes by network namespace: one pass over /proc serves every pod. */
export type ProcessTable = Map<string, number[]>;

/**
 * Only the namespaces `wanted` (when given) are kept: the machine's other processes (the rest of the
 * suite's) are not read beyond their namespace link, since tests list pods many times a second.
 */
export function processTable(wanted?: ReadonlySet<string>): ProcessTable {
  const table: ProcessTable = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const ns = netNamespace(pid);
    if (ns === null || (wanted && !wanted.has(ns)) || isZombie(pid)) continue;
    const list = table.get(ns) ?? [];
    list.push(pid);
    table.set(ns, list);
  }
  return table;
}

/** Processes in the network namespace `inode` ("net:[<inode>]"). */
export function processesInNetNamespace(inode: string, table: ProcessTable = processTable(new Set([inode]))): ProcInfo[] {
  return (table.get(inode) ?? []).flatMap((pid) => describe(pid) ?? []);
}

/** The pid of the only child of `pid` (unshare --fork's child, i.e. the namespace's PID 1). */
export function onlyChild(pid: number): number | null {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    return children.length === 1 && children[0] ? Number(children[0]) : null;
  } catch {
    return null;
  }
}

/** True if port `port` has a TCP listener in the network namespace of `pid` (IPv4 or IPv6). */
export function hasListener(pid: number, port: number): boolean {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const file of ['tcp', 'tcp6']) {
    let table: string;
    try {
      table = readFileSync(`/proc/${pid}/net/${file}`, 'utf8');
    } catch {
      return false;
    }
    for (const line of table.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // st 0A = LISTEN.
      if (cols[1]?.endsWith(`:${hexPort}`) && cols[3] === '0A') return true;
    }
  }
  return false;
}
