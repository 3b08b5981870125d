// Finds a pod's processes on the machine by its network namespace: every process of a pod (the
// container, whatever it spawned, sshd sessions, the port relays) lives in it, and nothing else does.
// A namespace inode can be reused once the namespace is gone, so for a deleted pod only processes
// that started before its deletion count (a later pod reusing the inode started after it).
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

/** Clock ticks since boot, the unit of a process's start time in /proc/<pid>/stat. */
export function nowTicks(): number {
  const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
  return Math.floor(uptime * 100);
}

function startTicks(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command may hold spaces and parentheses: fields are counted after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z') return null;
    return Number(fields[19]);
  } catch {
    return null;
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
export type ProcessTable = Map<string, { pid: number; startTicks: number }[]>;

export function processTable(): ProcessTable {
  const table: ProcessTable = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const ns = netNamespace(pid);
    const started = ns === null ? null : startTicks(pid);
    if (ns === null || started === null) continue;
    const list = table.get(ns) ?? [];
    list.push({ pid, startTicks: started });
    table.set(ns, list);
  }
  return table;
}

/** Processes in the network namespace `inode`, started at or before `beforeTicks` if given. */
export function processesInNetNamespace(inode: string, beforeTicks?: number, table: ProcessTable = processTable()): ProcInfo[] {
  return (table.get(inode) ?? [])
    .filter((proc) => beforeTicks === undefined || proc.startTicks <= beforeTicks)
    .flatMap((proc) => describe(proc.pid) ?? []);
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
