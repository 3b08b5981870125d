// The bootstrap and the watchdog on real (simulated) pods: the create call carries the rendered args
// and env, the pod runs them under dash or bash --posix, and its watchdog deletes it through the
// simulator's API with the pod-scoped key Runpod injects. SSH with the OpenSSH client, host key pinned.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { markRetrievedCommand, parseAck, parseStartOutput, setKeepCommand, startJobCommand } from '../../src/pod/job.ts';
import { parsePodState, podStateCommand, type PodState } from '../../src/pod/state.ts';
import { IMAGE_REQUIREMENTS, SSHD_CONFIG_PATH, SSHD_HOST_KEY_PATH } from '../../src/pod/protocol.ts';
import { injectFault, podLogUntil, simPodLogs } from '../runpod-sim/client.ts';
import { startSimulator, type RunningSimulator } from '../runpod-sim/server.ts';
import { freePort } from '../envtest/harness.ts';
import { ACCOUNT_KEY, SHELLS, SSH_LOOK_MS, cleanUp, createPod, keys, run, simPod, ssh, sshPort, waitDeleted, type Keys } from './helpers.ts';
import { eventually, EVENTUALLY_MS } from '../support/eventually.ts';

/** Images with an NGC-style ENTRYPOINT (its setup, then `exec "$@"`); any other image has none. */
const IMAGES = {
  /** Its entrypoint makes host keys of its own (and an sshd_config that would serve them). */
  withHostKeys: 'ngc-style/with-host-keys:1',
  /** Its start script runs its own sshd on 22 (fresh host keys), then takes a while before the args. */
  ownSshd: 'ngc-style/own-sshd:1',
};

const SIM_CONFIG = {
  gpuTypes: [{ id: 'NVIDIA A40', displayName: 'A40', memoryInGb: 48, pricePerHour: 0.4, stock: { 'EU-RO-1': 64 } }],
  rateLimits: { enabled: false },
  timings: { restartDelayMs: 200 },
  images: {
    [IMAGES.withHostKeys]: {
      entrypoint: ['/bin/sh', '-c', 'ssh-keygen -q -t ecdsa -N "" -f /etc/ssh/ssh_host_ecdsa_key && ssh-keygen -q -t ed25519 -N "" -f /etc/ssh/ssh_host_ed25519_key && exec "$@"', 'nvidia_entrypoint'],
    },
    [IMAGES.ownSshd]: { entrypoint: ['/bin/sh', '-c', 'sleep 20; exec "$@"', 'start'], ownSshd: true },
  },
};

const unix = (): number => Math.floor(Date.now() / 1000);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function podState(port: number, keys: Keys): Promise<PodState> {
  const result = await ssh(port, keys, podStateCommand());
  assert.equal(result.code, 0, result.stderr);
  return parsePodState(result.stdout);
}

/**
 * Waits until both verdicts are in (over SSH) and returns the state. The port is published before
 * our sshd listens (as on Runpod): until it does, connections are refused or meet the image's sshd.
 */
async function verdicts(port: number, keys: Keys): Promise<PodState> {
  return eventually('the bootstrap and watchdog verdicts', async () => {
    const result = await ssh(port, keys, podStateCommand());
    if (result.code !== 0) return undefined;
    const state = parsePodState(result.stdout);
    return state.bootstrap.status !== 'pending' && state.watchdog.status !== 'pending' ? state : undefined;
  }, EVENTUALLY_MS, SSH_LOOK_MS);
}

/** A deletion by the pod itself, for the given reason (the watchdog's log line, in the pod's logs). */
async function deletedByPod(sim: RunningSimulator, id: string, reason: RegExp, timeoutMs = EVENTUALLY_MS): Promise<number> {
  const pod = await waitDeleted(sim, id, timeoutMs);
  const logs = await simPodLogs(sim.adminUrl, id);
  assert.equal(pod.deletedBy, 'pod', logs);
  assert.match(logs, reason);
  return Date.parse(pod.deletedAt ?? '');
}

/**
 * Runs `body` with a PATH of symlinks to every required tool (and the shells) but `lacking`. It lives
 * on this machine's file system, which is the pod's (read-only; /tmp and /var/tmp are the pod's own).
 */
async function withPathLacking(lacking: string[], body: (bin: string) => Promise<void>): Promise<void> {
  mkdirSync('/var/lib/runpod-operator-tests', { recursive: true });
  const root = mkdtempSync('/var/lib/runpod-operator-tests/path-');
  const bin = join(root, 'bin');
  mkdirSync(bin);
  try {
    for (const tool of [...IMAGE_REQUIREMENTS, 'curl', 'dash', 'bash']) {
      if (lacking.includes(tool)) continue;
      const found = (await run(['sh', '-c', `command -v ${tool}`])).stdout.trim();
      if (found !== '') symlinkSync(found, join(bin, tool));
    }
    await body(bin);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/**
 * Each test has a simulator of its own (tests run concurrently, and faults are simulator-wide) and
 * ends with the leak check: whatever is still alive is deleted with the account key, then nothing
 * of any pod may remain.
 */
async function withSim(body: (sim: RunningSimulator) => Promise<void>): Promise<void> {
  const sim = await startSimulator({ apiKeys: [ACCOUNT_KEY], config: SIM_CONFIG });
  try {
    await body(sim);
    await cleanUp(sim);
  } finally {
    await sim.stop();
  }
}

for (const shell of SHELLS) {
  describe(`pods under ${shell}`, { concurrency: true }, () => {
    const name = (what: string): string => `${what}-${shell.split(' ')[0] ?? 'sh'}`;

    test('sshd presents exactly the pinned host key (never the image\'s), keys only; both verdicts ok', () => withSim(async (sim) => {
      const k = await keys();
      // The image ships host keys of its own and an sshd_config that would serve them, and its
      // ENTRYPOINT runs before the args (NGC style).
      const id = await createPod(sim, { name: name('pinned'), shell, keys: k, image: IMAGES.withHostKeys });
      const port = await sshPort(sim, id);
      const state = await verdicts(port, k);
      assert.deepEqual(state.bootstrap, { status: 'ok' });
      assert.deepEqual(state.watchdog, { status: 'ok' });
      assert.equal(state.job.status, 'none');

      const ok = await ssh(port, k, 'true');
      assert.equal(ok.code, 0, ok.stderr);
      const imageKey = await ssh(port, k, 'cat /etc/ssh/ssh_host_ed25519_key.pub');
      assert.match(imageKey.stdout, /^ssh-ed25519 /);
      const refused = await ssh(port, k, 'true', { pinnedHostKey: imageKey.stdout.trim() });
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/);
      // Every key type the server is asked for: only ours is ever offered.
      const scan = await run(['ssh-keyscan', '-p', String(port), '127.0.0.1']);
      const offered = scan.stdout.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
      assert.deepEqual(offered.map((line) => line.split(' ').slice(1).join(' ')), [k.hostPublic.split(' ').slice(0, 2).join(' ')]);

      // The effective sshd configuration and the files it relies on.
      const config = await ssh(port, k, `/usr/sbin/sshd -T -f ${SSHD_CONFIG_PATH} -h ${SSHD_HOST_KEY_PATH} -p 22`);
      assert.match(config.stdout, /^passwordauthentication no$/m);
      assert.match(config.stdout, /^permitrootlogin without-password$/m);
      assert.match(config.stdout, /^kbdinteractiveauthentication no$/m);
      assert.deepEqual(config.stdout.split('\n').filter((line) => line.startsWith('hostkey ')), [`hostkey ${SSHD_HOST_KEY_PATH}`]);
      const modes = await ssh(port, k, `stat -c '%a %n' /root/.ssh /root/.ssh/authorized_keys ${SSHD_HOST_KEY_PATH}; cat /root/.ssh/authorized_keys`);
      assert.equal(modes.stdout, `700 /root/.ssh\n600 /root/.ssh/authorized_keys\n600 ${SSHD_HOST_KEY_PATH}\n${k.clientPublic}\n`);

      // The secrets stay out of what the job and sshd see (the watchdog, PID 1, needs the pod key).
      const pod = await simPod(sim, id);
      const look = await ssh(port, k, 'cat /var/lib/runpod-operator/run/image.env; env; for p in $(pgrep -x sshd); do tr "\\0" "\\n" < /proc/$p/environ; done');
      assert.match(look.stdout, /^SSH_CONNECTION=/m, 'the session env was read');
      assert.ok(!look.stdout.includes(pod.podApiKey), 'the pod key is in no env but the watchdog\'s');
      assert.ok(!look.stdout.includes('RUNPOD_OPERATOR_HOST_KEY='), 'no env keeps the host key');
      assert.ok(!/RUNPOD_OPERATOR_(BOOTSTRAP|WATCHDOG)=/.test(look.stdout), 'the scripts stay out of the job\'s env');
      const watchdogEnv = await ssh(port, k, 'tr "\\0" "\\n" < /proc/1/environ');
      assert.ok(watchdogEnv.stdout.includes(`RUNPOD_API_KEY=${pod.podApiKey}`) && !watchdogEnv.stdout.includes('RUNPOD_OPERATOR_HOST_KEY='));
      assert.match(look.stdout, new RegExp(`^export RUNPOD_POD_ID='${id}'$`, 'm'));
      const logs = await ssh(port, k, 'cat /var/lib/runpod-operator/run/watchdog.log /var/lib/runpod-operator/run/bootstrap.log');
      assert.ok(!logs.stdout.includes(pod.podApiKey) && !(await simPodLogs(sim.adminUrl, id)).includes(pod.podApiKey), 'the pod key is never logged');
    }));

    test('the deadline deletes the pod (by the pod itself), not before it', () => withSim(async (sim) => {
      const k = await keys();
      const deadline = unix() + 8;
      const id = await createPod(sim, { name: name('deadline'), shell, keys: k, input: { deadline } });
      // The log line names the rule; the bound only tells it from a later rule (the boot grace is 1800 s)
      // on a loaded machine, where a period of the watchdog can take many seconds.
      const deletedAt = await deletedByPod(sim, id, /watchdog: deleting the pod: the deadline passed/, 90000);
      assert.ok(deletedAt >= deadline * 1000, `deleted at ${deletedAt}, deadline ${deadline * 1000}`);
      assert.ok(deletedAt <= (deadline + 60) * 1000, `deleted ${deletedAt - deadline * 1000} ms after the deadline`);
    }));

    test('the boot grace deletes a pod whose job never started', () => withSim(async (sim) => {
      const k = await keys();
      // Long enough for a loaded machine to connect and read the verdicts first.
      const id = await createPod(sim, { name: name('bootgrace'), shell, keys: k, input: { bootGraceSeconds: 30 } });
      const port = await sshPort(sim, id);
      assert.deepEqual((await verdicts(port, k)).watchdog, { status: 'ok' });
      await deletedByPod(sim, id, /deleting the pod: no job started within 30 s of the watchdog's start/, 90000);
    }));

    test('the cost cap deletes the pod once cost x lifetime reaches it', () => withSim(async (sim) => {
      const k = await keys();
      // $0.40/h: $0.0006 is spent 5.4 s after the create.
      const id = await createPod(sim, { name: name('costcap'), shell, keys: k, input: { maxCostUsd: '0.0006' } });
      const created = Date.parse((await simPod(sim, id)).createdAt);
      const deletedAt = await deletedByPod(sim, id, /deleting the pod: the cost cap was reached \(spent about \$\d+\.\d+ at \$0\.4\/h, cap \$0\.0006\)/);
      assert.ok(deletedAt - created >= 4000, `deleted ${deletedAt - created} ms after the create`);
      const logs = await simPodLogs(sim.adminUrl, id);
      assert.match(logs, /cost cap: \$0\.0006 at \$0\.4\/h from \d+/);
      // Not before the cap (how long after it depends on the machine's load: no upper bound here).
      const spent = Number(/the cost cap was reached \(spent about \$(\d+\.\d+)/.exec(logs)?.[1]);
      assert.ok(spent >= 0.0006, `spent ${spent}`);
    }));

    test('the retrieved marker deletes the pod', () => withSim(async (sim) => {
      const k = await keys();
      const id = await createPod(sim, { name: name('retrieved'), shell, keys: k });
      const port = await sshPort(sim, id);
      await verdicts(port, k);
      const marked = await ssh(port, k, markRetrievedCommand());
      assert.equal(parseAck(marked.stdout, 'runpod-operator-retrieved'), 'ok');
      await deletedByPod(sim, id, /deleting the pod: the results were retrieved/);
    }));

    test('a job on the pod: its exit code 3 and log are recorded (and copied to the container\'s log), the image env reaches it (never the pod key), then the retrieve grace deletes the pod', () => withSim(async (sim) => {
      const k = await keys();
      const runDir = "/workspace/a run's dir";
      // Long enough for a loaded machine to read the exit code over SSH (a look a second, each slow under
      // load) before the grace deletes the pod.
      const id = await createPod(sim, { name: name('job'), shell, keys: k, input: { runDir, retrieveGraceSeconds: 30 } });
      const port = await sshPort(sim, id);
      await verdicts(port, k);
      const command = ['sh', '-c', 'echo "pod=$RUNPOD_POD_ID key=${RUNPOD_API_KEY:-none} cwd=$(pwd)"; exit 3'];
      const started = await ssh(port, k, startJobCommand({ runDir, command, shell }));
      assert.equal(parseStartOutput(started.stdout).outcome, 'started', started.stderr);
      const done = await eventually('the job to end', async () => {
        const state = await podState(port, k);
        return state.job.status === 'exited' ? state : undefined;
      }, EVENTUALLY_MS, SSH_LOOK_MS);
      assert.equal(done.job.exitCode, 3);
      assert.equal(done.logTail, `pod=${id} key=none cwd=${runDir}\n`);
      // The supervisor copied the job's output to the container's stdout: Runpod's console and log stream show it.
      const shown = await podLogUntil(sim.baseUrl, ACCOUNT_KEY, id, 'source=container&tail=5000', /^pod=/);
      const jobLines = shown.filter((event) => event.line.startsWith('pod=')).map(({ source, line }) => ({ source, line }));
      assert.deepEqual(jobLines, [{ source: 'container', line: `pod=${id} key=none cwd=${runDir}` }]);
      await deletedByPod(sim, id, /the job ended with exit code 3[^\n]*\n[^]*deleting the pod: the job ended at \d+ and its results were not retrieved within 30 s/);
    }));

    test('a keep marker keeps the pod past the boot grace and the retrieve grace once a job exists; unkept, it goes', () => withSim(async (sim) => {
      const k = await keys();
      // The boot grace must outlast the setup below even on a loaded machine.
      const createdAt = Date.now();
      const id = await createPod(sim, { name: name('keep'), shell, keys: k, input: { bootGraceSeconds: 45, retrieveGraceSeconds: 2 } });
      const port = await sshPort(sim, id);
      await verdicts(port, k);
      assert.equal(parseAck((await ssh(port, k, setKeepCommand({ keep: true }))).stdout, 'runpod-operator-keep'), '1');
      assert.equal(parseStartOutput((await ssh(port, k, startJobCommand({ command: ['sleep', '1'], shell }))).stdout).outcome, 'started');
      // Past the boot grace (counted from the watchdog's start) and the retrieve grace after the job's end.
      await sleep(createdAt + 46000 - Date.now());
      const kept = await simPod(sim, id);
      assert.equal(kept.deletedAt, null, await simPodLogs(sim.adminUrl, id));
      const state = await podState(port, k);
      assert.equal(state.job.status, 'exited');
      assert.equal(state.keep, true);
      assert.match(await simPodLogs(sim.adminUrl, id), /keepPod: the pod is kept once its job exists/);
      assert.equal(parseAck((await ssh(port, k, setKeepCommand({ keep: false }))).stdout, 'runpod-operator-keep'), '0');
      await deletedByPod(sim, id, /keepPod: off[^]*deleting the pod: the job ended at \d+ and its results were not retrieved within 2 s/);
    }));

    test('a kept pod (keepPod at create) is still deleted by the boot grace while it has no job', () => withSim(async (sim) => {
      const k = await keys();
      const id = await createPod(sim, { name: name('keep-nojob'), shell, keys: k, input: { keepPod: true, bootGraceSeconds: 3 } });
      await deletedByPod(sim, id, /deleting the pod: no job started within 3 s/);
    }));

    test('a bad host key fails the bootstrap: the watchdog deletes the pod at once', () => withSim(async (sim) => {
      const k = await keys();
      const broken = '-----BEGIN OPENSSH PRIVATE KEY-----\nbm90IGEga2V5\n-----END OPENSSH PRIVATE KEY-----\n';
      const id = await createPod(sim, { name: name('badkey'), shell, keys: k, input: { hostPrivateKey: broken } });
      await deletedByPod(sim, id, /bootstrap: FAILED: sshd rejects the host key or its configuration[^]*watchdog: deleting the pod: the bootstrap failed: sshd rejects the host key/);
      assert.doesNotMatch(await simPodLogs(sim.adminUrl, id), /watchdog: verdict: ok/);
    }));

    test('an image without setsid: the bootstrap names it and the pod is deleted at once', () => withSim(async (sim) => {
      const k = await keys();
      await withPathLacking(['setsid'], async (bin) => {
        const id = await createPod(sim, { name: name('nosetsid'), shell, keys: k, extraEnv: { PATH: bin } });
        await deletedByPod(sim, id, /bootstrap: FAILED: the image lacks: setsid\n[^]*watchdog: verdict: failed: the bootstrap failed: the image lacks: setsid/);
      });
    }));

    test('an image without base64: the args\' stub says so and deletes the pod itself (nothing else of ours can run)', () => withSim(async (sim) => {
      const k = await keys();
      await withPathLacking(['base64'], async (bin) => {
        const id = await createPod(sim, { name: name('nobase64'), shell, keys: k, extraEnv: { PATH: bin } });
        await deletedByPod(sim, id, /runpod-operator bootstrap: FAILED: the image lacks: base64; deleting the pod/);
        assert.equal((await simPod(sim, id)).restarts, 0, 'the container stayed up: no restart loop');
      });
    }));

    test('an image whose own sshd holds port 22 first: a foreign host key is refused until the bootstrap takes the port over', () => withSim(async (sim) => {
      const k = await keys();
      const id = await createPod(sim, { name: name('ownsshd'), shell, keys: k, image: IMAGES.ownSshd });
      const port = await sshPort(sim, id);
      // The image's sshd answers first, with a key of its own: the pinned check refuses it.
      const foreign = await eventually('the image\'s sshd', async () => {
        const tried = await ssh(port, k, 'true');
        return /Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED/.test(tried.stderr) ? tried : undefined;
      }, EVENTUALLY_MS, SSH_LOOK_MS);
      assert.notEqual(foreign.code, 0);
      const state = await verdicts(port, k);
      assert.deepEqual(state.bootstrap, { status: 'ok' });
      const scan = await run(['ssh-keyscan', '-p', String(port), '127.0.0.1']);
      const offered = scan.stdout.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
      assert.deepEqual(offered.map((line) => line.split(' ').slice(1).join(' ')), [k.hostPublic.split(' ').slice(0, 2).join(' ')], 'only the pinned key is served now');
      const logs = await simPodLogs(sim.adminUrl, id);
      assert.match(logs, /bootstrap: stopping the image's own listener on port 22 \(pid \d+\)/);
      // What reached the image's sshd (its VERBOSE log, up to the takeover): connections, never an
      // authentication attempt ("Failed publickey ... authenticating user" if one had been made).
      const foreignLog = logs.slice(0, logs.indexOf('stopping the image\'s own listener'));
      assert.match(foreignLog, /Connection from 127\.0\.0\.1 port \d+ on 127\.0\.0\.1 port 22/);
      assert.doesNotMatch(foreignLog, /Accepted|Failed|Postponed|authenticating user/);
    }));

    test('a watchdog that cannot reach the API with its key reports failed (the controller then deletes the pod)', () => withSim(async (sim) => {
      const k = await keys();
      const apiUrl = `http://127.0.0.1:${await freePort()}/v2`;
      const id = await createPod(sim, { name: name('nokey'), shell, keys: k, input: { apiUrl, verdictBoundSeconds: 4 } });
      const port = await sshPort(sim, id);
      const state = await verdicts(port, k);
      assert.deepEqual(state.bootstrap, { status: 'ok' });
      assert.equal(state.watchdog.status, 'failed');
      assert.match(state.watchdog.status === 'failed' ? state.watchdog.reason : '', new RegExp(`^GET /pods/${id}: no answer from ${apiUrl.replace(/[/.]/g, '\\$&')} \\(curl exit 7\\) after \\d+ tries in 4 s$`));
      assert.equal((await simPod(sim, id)).deletedAt, null);
    }));

    test('a container restart: the bootstrap runs again on the same state, the job is recorded lost, the retrieve grace applies', () => withSim(async (sim) => {
      const k = await keys();
      const id = await createPod(sim, { name: name('restart'), shell, keys: k, input: { retrieveGraceSeconds: 3 } });
      const port = await sshPort(sim, id);
      await verdicts(port, k);
      assert.equal(parseStartOutput((await ssh(port, k, startJobCommand({ command: ['sleep', '600'], shell }))).stdout).outcome, 'started');
      await eventually('the job to run', async () => ((await podState(port, k)).job.status === 'running' ? true : undefined), EVENTUALLY_MS, SSH_LOOK_MS);
      const restarted = await fetch(`${sim.baseUrl}/pods/${id}/action`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${ACCOUNT_KEY}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ action: 'restart' }),
      });
      assert.equal(restarted.status, 200);
      await restarted.body?.cancel();
      await deletedByPod(sim, id, /bootstrap: the container restarted\n[^]*bootstrap: the job died with the previous container[^]*the job ended without an exit code \(lost\)[^]*deleting the pod: the job ended at \d+ and its results were not retrieved within 3 s/);
    }));
  });
}

describe('delete fallbacks', { concurrency: true }, () => {
  for (const shell of SHELLS) {
    test(`DELETE answered 500: the terminate action deletes the pod (${shell})`, () => withSim(async (sim) => {
      const k = await keys();
      const id = await createPod(sim, { name: `fallback-${shell.split(' ')[0] ?? 'sh'}`, shell, keys: k, input: { bootGraceSeconds: 3 } });
      await sshPort(sim, id);
      await injectFault(sim.adminUrl, { fault: 'http-5xx', method: 'DELETE', path: '/v2/pods/{id}', status: 500 });
      await deletedByPod(sim, id, /DELETE \/pods\/\w+ failed: HTTP 500; trying the terminate action/);
    }));

    test(`DELETE and terminate both refused: the watchdog tries again until the pod is gone (${shell})`, () => withSim(async (sim) => {
      const k = await keys();
      const id = await createPod(sim, { name: `retry-${shell.split(' ')[0] ?? 'sh'}`, shell, keys: k, input: { bootGraceSeconds: 3 } });
      await sshPort(sim, id);
      await injectFault(sim.adminUrl, { fault: 'http-5xx', method: 'DELETE', path: '/v2/pods/{id}', status: 503, count: 2 });
      await injectFault(sim.adminUrl, { fault: 'rate-limit', method: 'POST', path: '/v2/pods/{id}/action', count: 2 });
      // Deleted during the third DELETE (the pod dies before it can log the answer).
      await deletedByPod(sim, id, /(deleting the pod: no job started[^\n]*\n[^\n]*HTTP 503; trying the terminate action\n[^\n]*terminate failed: HTTP 429; trying again in 1 s\n[^]*){2}deleting the pod: no job started/);
    }));
  }
});
