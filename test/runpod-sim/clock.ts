// The clock-skew fault: a pod whose host clock is off. A time namespace cannot shift the realtime
// clock, so the pod's `date` is replaced, in the container's own mount namespace, by a shim that adds
// the offset to every reading of the clock (and leaves a conversion of a given time alone). Our on-pod
// scripts read time only through `date` (test/pod/render.test.ts checks), so this covers every clock
// they read; sleep, sshd and the kernel keep the real one.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { onlyChild } from './procs.ts';

/** Where the shim, the real date and the offset live: the container's own /run (a tmpfs of its own). */
const CLOCK_DIR = '/run/runpod-sim-clock';

/**
 * Shell text defining `skew_clock OFFSET`: the first call copies the real date aside and binds the shim
 * over `date` in every directory of PATH that has it; every call (again) just replaces the offset file,
 * which the shim reads at each call.
 */
export function clockSkewFunction(pathDirs: readonly string[]): string {
  const shim = [
    '#!/bin/sh',
    `real=${CLOCK_DIR}/date.real`,
    // A time to convert or set is not a reading of the clock.
    'for a in "$@"; do case $a in -d* | --date* | -r* | --reference* | -s* | --set* | -f* | --file*) exec "$real" "$@" ;; esac; done',
    "off=''",
    `IFS= read -r off <${CLOCK_DIR}/offset 2>/dev/null`,
    'now=$("$real" +%s.%N)',
    'exec "$real" -d "@$((${now%.*} + ${off:-0})).${now#*.}" "$@"',
  ];
  return `skew_clock() {
  if [ ! -e ${CLOCK_DIR}/date.real ]; then
    real=$(command -v date)
    mkdir -p ${CLOCK_DIR}
    cp "$real" ${CLOCK_DIR}/date.real
    printf '%s\\n' ${shim.map(shellQuote).join(' ')} >${CLOCK_DIR}/date
    chmod 755 ${CLOCK_DIR}/date
    for dir in ${pathDirs.join(' ')}; do
      if [ ! -L "$dir" ] && [ -f "$dir/date" ] && [ ! -L "$dir/date" ]; then mount --bind ${CLOCK_DIR}/date "$dir/date"; fi
    done
  fi
  printf '%s\\n' "$1" >${CLOCK_DIR}/offset.tmp && mv -f ${CLOCK_DIR}/offset.tmp ${CLOCK_DIR}/offset
}
`;
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * Skews a running container's clock: waits until its setup has exec'd the container's command (its own
 * mounts would hide the shim otherwise), then runs skew_clock in its mount namespace. `launcherPid` is
 * the container's launcher (nsenter, then unshare, then the container's init); `setupName` is the $0
 * the container's setup script runs under. Resolves false if the container ended first.
 */
export async function skewRunningClock(launcherPid: number, setupName: string, offsetSeconds: number, pathDirs: readonly string[], path: string): Promise<boolean> {
  const giveUp = Date.now() + 15_000;
  for (;;) {
    const unshare = onlyChild(launcherPid);
    const init = unshare === null ? null : onlyChild(unshare);
    if (init !== null && unshare !== null && setupDone(commandLine(unshare), commandLine(init), setupName)) return nsenterSkew(init, offsetSeconds, pathDirs, path);
    if (Date.now() > giveUp || (unshare === null && !alive(launcherPid))) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Whether the container's init (forked by `unshare`) runs the container's command: past its setup.
 * Between unshare's fork and its exec the init still has unshare's argv, which is not the setup's
 * either: a skew then would go under the /run the setup is about to mount.
 */
export function setupDone(unshareArgv: readonly string[] | undefined, initArgv: readonly string[] | undefined, setupName: string): boolean {
  if (initArgv === undefined || unshareArgv === undefined || initArgv[3] === setupName) return false;
  return initArgv.length !== unshareArgv.length || initArgv.some((arg, i) => arg !== unshareArgv[i]);
}

async function nsenterSkew(init: number, offsetSeconds: number, pathDirs: readonly string[], path: string): Promise<boolean> {
  const proc = spawn('nsenter', ['--target', String(init), '--mount', '--', 'sh', '-c', `${clockSkewFunction(pathDirs)}skew_clock "$1"`, 'runpod-sim-clock', String(offsetSeconds)],
    { stdio: 'ignore', env: { PATH: path } });
  const code = await new Promise<number | null>((resolve) => {
    proc.once('exit', (exitCode) => resolve(exitCode));
    proc.once('error', () => resolve(null));
  });
  return code === 0;
}

function commandLine(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
