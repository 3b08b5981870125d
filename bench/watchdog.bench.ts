// The watchdog's reading of one Runpod answer on the pod: GET /pods/{id} carries the pod's env, the
// base64 scripts included (some 60 KB). Printed: the CPU per answer in dash and bash --posix, as
// api() reads it now (answer_part: awk) and as it did with shell patterns (${resp##*...}), which are
// quadratic in dash. Every pod pays this at its probe, and again for each clock or price read.
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { WATCHDOG_SCRIPT } from '../src/pod/render.ts';

const body = JSON.stringify({ id: 'abc', env: { RUNPOD_OPERATOR_WATCHDOG: Buffer.from(WATCHDOG_SCRIPT).toString('base64').repeat(2) }, costPerHr: 0.69 });
const answer = `HTTP/1.1 200 OK\r\nDate: Fri, 04 Dec 2026 17:46:36 GMT\r\n\r\n${body}\n200`;
const rounds = Number(process.env.WATCHDOG_ROUNDS ?? 5);

const now = 'h=$(answer_part headers); c=$(answer_part code); b=$(answer_part body)';
const before = `CR=$(printf '\\r'); NL='\n'
case $resp in *"$CR$NL$CR$NL"*) h=$(printf '%s' "\${resp%"$CR$NL$CR$NL"*}" | tr -d '\\r'); resp=\${resp##*"$CR$NL$CR$NL"};; esac
c=\${resp##*"$NL"}; b=\${resp%"$NL"*}`;

/** CPU seconds of one shell reading the answer `rounds` times (the shell's own and its children's). */
function cpuMs(shell: string[], reading: string): number {
  const script = `. /dev/stdin <<'EOF'\n${WATCHDOG_SCRIPT}\nEOF\nresp=$(cat /tmp/rpo-bench-answer)\ni=0\nwhile [ $i -lt ${rounds} ]; do ${reading}; i=$((i + 1)); done\ntimes`;
  const [command = 'sh', ...args] = shell;
  const result = spawnSync(command, [...args, '-c', script, 'runpod-operator-watchdog-rules'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (result.status !== 0) throw new Error(`${shell.join(' ')}: ${result.stderr}`);
  // `times`: the shell's user and system time, then its children's.
  const seconds = [...result.stdout.matchAll(/(\d+)m([\d.]+)s/g)].reduce((sum, m) => sum + Number(m[1]) * 60 + Number(m[2]), 0);
  return (seconds * 1000) / rounds;
}

writeFileSync('/tmp/rpo-bench-answer', answer);
try {
  console.log(`watchdog: one ${Math.round(answer.length / 1024)} KB answer of GET /pods/{id}, CPU per answer (${rounds} rounds)`);
  for (const shell of [['dash'], ['bash', '--posix']]) {
    console.log(`  ${shell.join(' ').padEnd(12)} answer_part (awk): ${cpuMs(shell, now).toFixed(1).padStart(7)} ms   shell patterns (before): ${cpuMs(shell, before).toFixed(1).padStart(7)} ms`);
  }
} finally {
  rmSync('/tmp/rpo-bench-answer', { force: true });
}
