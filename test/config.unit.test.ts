// The flags of §3/§4 under controller-runtime's names, their defaults, and errors that name the flag.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { envName, flagNames, loadConfig, resultsStoreOf } from '../src/config.ts';
import { flagHelp, usage } from '../src/config-help.ts';

void test('leader election, metrics and probe flags default as controller-runtime\'s do', () => {
  const config = loadConfig([], {});
  assert.equal(config.leaderElect, true);
  assert.equal(config.leaderElectLeaseDuration, 15_000);
  assert.equal(config.leaderElectRenewDeadline, 10_000);
  assert.equal(config.leaderElectRetryPeriod, 2_000);
  assert.equal(config.leaderElectionId, 'runpod-operator-leader');
  assert.deepEqual(config.metricsBindAddress, { host: undefined, port: 8080 });
  assert.deepEqual(config.healthProbeBindAddress, { host: undefined, port: 8081 });
});

void test('a bare --leader-elect (kubebuilder manifests) is true; =false turns it off', () => {
  assert.equal(loadConfig(['--leader-elect', '--leader-election-id', 'x.runpod-operator.dev'], {}).leaderElect, true);
  assert.equal(loadConfig(['--leader-elect'], {}).leaderElect, true);
  assert.equal(loadConfig(['--leader-elect=false'], {}).leaderElect, false);
  assert.equal(loadConfig([], { RUNPOD_OPERATOR_LEADER_ELECT: 'false' }).leaderElect, false);
});

void test('bind addresses: [host]:port, IPv6 in brackets, 0 disables', () => {
  const config = loadConfig(['--metrics-bind-address=0', '--health-probe-bind-address', '[::1]:9440'], {});
  assert.equal(config.metricsBindAddress, undefined);
  assert.deepEqual(config.healthProbeBindAddress, { host: '::1', port: 9440 });
  assert.deepEqual(loadConfig(['--metrics-bind-address=127.0.0.1:0'], {}).metricsBindAddress, { host: '127.0.0.1', port: 0 });
  assert.throws(() => loadConfig(['--metrics-bind-address=8080'], {}), /--metrics-bind-address \(RUNPOD_OPERATOR_METRICS_BIND_ADDRESS\): must be \[host\]:port/);
  assert.throws(() => loadConfig(['--health-probe-bind-address=:70000'], {}), /--health-probe-bind-address/);
});

void test('inconsistent election timings are refused, naming the flag to change', () => {
  assert.throws(() => loadConfig(['--leader-elect-lease-duration=10s', '--leader-elect-renew-deadline=10s'], {}),
    /--leader-elect-renew-deadline .*must be shorter than --leader-elect-lease-duration/);
  assert.throws(() => loadConfig(['--leader-elect-retry-period=9s'], {}), /--leader-elect-retry-period .*renew-deadline/);
  assert.throws(() => loadConfig(['--leader-election-id=Not_A_Name'], {}), /--leader-election-id/);
  const ok = loadConfig(['--leader-elect-lease-duration=4s', '--leader-elect-renew-deadline=3s', '--leader-elect-retry-period=500ms'], {});
  assert.deepEqual([ok.leaderElectLeaseDuration, ok.leaderElectRenewDeadline, ok.leaderElectRetryPeriod], [4000, 3000, 500]);
});

void test('--max-concurrent-transfers: default 4, a whole number from 1 to 64, errors naming the flag', () => {
  assert.equal(loadConfig([], {}).maxConcurrentTransfers, 4);
  assert.equal(loadConfig(['--max-concurrent-transfers=5'], {}).maxConcurrentTransfers, 5);
  assert.equal(loadConfig([], { RUNPOD_OPERATOR_MAX_CONCURRENT_TRANSFERS: '1' }).maxConcurrentTransfers, 1);
  assert.throws(() => loadConfig(['--max-concurrent-transfers=0'], {}), /--max-concurrent-transfers \(RUNPOD_OPERATOR_MAX_CONCURRENT_TRANSFERS\): must be at least 1/);
  assert.throws(() => loadConfig(['--max-concurrent-transfers=1.5'], {}), /--max-concurrent-transfers .*must be a whole number/);
  assert.throws(() => loadConfig(['--max-concurrent-transfers=65'], {}), /--max-concurrent-transfers .*must be at most 64/);
  assert.throws(() => loadConfig(['--max-concurrent-transfers=two'], {}), /--max-concurrent-transfers/);
});

void test('--results-store: dir:/path (default: --results-dir) or s3://bucket/prefix/, errors naming the flag', () => {
  assert.deepEqual(loadConfig([], {}).resultsStore, undefined);
  assert.deepEqual(resultsStoreOf(loadConfig(['--results-dir=/data'], {})), { kind: 'dir', dir: '/data' });
  assert.deepEqual(resultsStoreOf(loadConfig(['--results-store=dir:/results'], {})), { kind: 'dir', dir: '/results' });
  assert.deepEqual(resultsStoreOf(loadConfig(['--results-store=s3://ml-results'], {})), { kind: 's3', bucket: 'ml-results', prefix: '' });
  assert.deepEqual(resultsStoreOf(loadConfig([], { RUNPOD_OPERATOR_RESULTS_STORE: 's3://ml-results/team-a/runs/' })), { kind: 's3', bucket: 'ml-results', prefix: 'team-a/runs/' });
  assert.throws(() => loadConfig(['--results-store=/results'], {}), /--results-store \(RUNPOD_OPERATOR_RESULTS_STORE\): must be dir:\/path or s3:\/\/bucket\/prefix\//);
  assert.throws(() => loadConfig(['--results-store=s3://ML_Results/'], {}), /--results-store .*bucket "ML_Results" is not a bucket name/);
  assert.throws(() => loadConfig(['--results-store=s3://ml-results/team-a'], {}), /--results-store .*prefix "team-a" must be a relative key prefix ending in "\/"/);
  assert.throws(() => loadConfig(['--results-store=s3://ml-results/a/../'], {}), /--results-store .*must not contain "\." or "\.\." segments/);
});

void test('--results-s3-endpoint, --results-s3-region, --results-s3-force-path-style are validated', () => {
  const config = loadConfig(['--results-s3-endpoint=http://127.0.0.1:8333', '--results-s3-region=eu-central-1', '--results-s3-force-path-style=true'], {});
  assert.deepEqual([config.resultsS3Endpoint, config.resultsS3Region, config.resultsS3ForcePathStyle], ['http://127.0.0.1:8333', 'eu-central-1', true]);
  assert.equal(loadConfig([], {}).resultsS3ForcePathStyle, false);
  assert.throws(() => loadConfig(['--results-s3-endpoint=store:8333'], {}), /--results-s3-endpoint \(RUNPOD_OPERATOR_RESULTS_S3_ENDPOINT\): must be an http or https URL/);
  assert.throws(() => loadConfig(['--results-s3-region=eu central'], {}), /--results-s3-region .*must be a region name/);
  assert.throws(() => loadConfig(['--results-s3-force-path-style=maybe'], {}), /--results-s3-force-path-style/);
});

void test('--results-s3-allowed-buckets: none by default; bucket names, or an endpoint URL and a bucket, comma-separated', () => {
  assert.deepEqual(loadConfig([], {}).resultsS3AllowedBuckets, []);
  assert.deepEqual(
    loadConfig([], { RUNPOD_OPERATOR_RESULTS_S3_ALLOWED_BUCKETS: 'ml-results, http://minio.storage.svc:9000/team-b' }).resultsS3AllowedBuckets,
    [{ bucket: 'ml-results' }, { bucket: 'team-b', endpoint: 'http://minio.storage.svc:9000' }],
  );
  assert.throws(() => loadConfig(['--results-s3-allowed-buckets=ML_Results'], {}), /--results-s3-allowed-buckets \(RUNPOD_OPERATOR_RESULTS_S3_ALLOWED_BUCKETS\): "ML_Results" is not a bucket name/);
  assert.throws(() => loadConfig(['--results-s3-allowed-buckets=ftp://store/b1'], {}), /--results-s3-allowed-buckets .*"ftp:\/\/store" must be an http or https URL/);
});

void test('--help names every flag with its env variable, and each default it shows is the one the schema applies', () => {
  const text = usage();
  const defaults = loadConfig([], {});
  for (const flag of flagNames) {
    assert.ok(flagHelp[flag].what.length > 0, flag);
    assert.match(text, new RegExp(`--${flag}\\n {8}.+\\n {8}env ${envName(flag)}\\n`), flag);
    const shown = flagHelp[flag].default;
    if (shown === undefined) continue;
    assert.deepEqual(loadConfig([`--${flag}=${shown}`], {}), defaults, `--${flag}: the default shown (${shown}) is not the default applied`);
  }
});

void test('bad input is one sentence naming what is wrong: an unknown flag, a missing value, an unreadable kubeconfig', () => {
  assert.throws(() => loadConfig(['--bogus'], {}), { message: 'unknown flag \'--bogus\' (--help lists the flags)' });
  assert.throws(() => loadConfig(['--poll-interval'], {}), { message: /^Option '--poll-interval <value>' argument missing/ });
  assert.throws(() => loadConfig(['--kubeconfig', '/nonexistent/kubeconfig'], {}),
    { message: 'invalid configuration: --kubeconfig (RUNPOD_OPERATOR_KUBECONFIG): cannot read /nonexistent/kubeconfig: no such file' });
  assert.throws(() => loadConfig([], { KUBECONFIG: '/nonexistent/kubeconfig' }), { message: /--kubeconfig .*cannot read \/nonexistent\/kubeconfig: no such file/ });
});

test('--selector takes a label selector as kubectl -l does, and says which requirement is wrong', () => {
  for (const selector of ['team=a', 'team==a,tier!=cpu', 'example.com/team in (a, b),!canary', 'gpu', 'tier notin (x)', 'team=']) {
    assert.equal(loadConfig(['--selector', selector], {}).selector, selector, selector);
  }
  assert.equal(loadConfig([], { RUNPOD_OPERATOR_SELECTOR: ' team=a ' }).selector, 'team=a');
  assert.equal(loadConfig([], {}).selector, undefined);
  assert.throws(() => loadConfig(['--selector', 'team=a,tier in (x'], {}), /--selector \(RUNPOD_OPERATOR_SELECTOR\): must be a label selector: its parentheses do not match/);
  assert.throws(() => loadConfig(['--selector', 'team=a,=b'], {}), /--selector .*"=b" is not a requirement/);
  assert.throws(() => loadConfig(['--selector', 'team=a b'], {}), /"team=a b" is not a requirement/);
  assert.throws(() => loadConfig(['--selector', 'Team_/x=1'], {}), /is not a requirement/);
});
