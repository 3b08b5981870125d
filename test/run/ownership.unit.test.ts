// The ownership rule the sweeper applies: the cluster id and the install's scope must both match.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { POD_ENV } from '../../src/pod/protocol.ts';
import { installScope, ownsPod, type Owner } from '../../src/run/ownership.ts';

const markers = (cluster: string | undefined, scope: string | undefined): Record<string, string> => ({
  ...(cluster === undefined ? {} : { [POD_ENV.cluster]: cluster }),
  ...(scope === undefined ? {} : { [POD_ENV.scope]: scope }),
  [POD_ENV.run]: 'uid-1',
});

describe('ownership', () => {
  test('the scope marker of an install', () => {
    assert.equal(installScope('team-a'), 'namespace/team-a');
    assert.equal(installScope(undefined), 'cluster-wide');
    assert.notEqual(installScope('cluster-wide'), installScope(undefined), 'a namespace named cluster-wide is still a namespace');
    assert.match(installScope('team-a', 'shard=1'), /^namespace\/team-a\/selector-[0-9a-f]{12}$/);
    assert.match(installScope(undefined, 'shard in (1,2)'), /^cluster-wide\/selector-[0-9a-f]{12}$/);
    assert.notEqual(installScope('team-a', 'shard=1'), installScope('team-a', 'shard=2'));
  });

  test('shards (--selector) of one namespace own their pods apart, and apart from the unsharded install', () => {
    const [one, two, all] = ['shard=1', 'shard=2', undefined].map((selector): Owner => ({ clusterId: 'c1', scope: installScope('team-a', selector) }));
    const podOf = (owner: Owner | undefined) => markers('c1', owner?.scope);
    assert.deepEqual([one, two, all].map((owner) => [one, two, all].map((other) => owner && ownsPod(owner, podOf(other)))),
      [[true, false, false], [false, true, false], [false, false, true]]);
  });

  const teamA: Owner = { clusterId: 'c1', scope: installScope('team-a') };
  const clusterWide: Owner = { clusterId: 'c1', scope: installScope(undefined) };
  const cases: [string, Owner, Record<string, string>, boolean][] = [
    ['same cluster, same namespace', teamA, markers('c1', 'namespace/team-a'), true],
    ['same cluster, another namespace\'s install', teamA, markers('c1', 'namespace/team-b'), false],
    ['same cluster, a cluster-wide install\'s pod', teamA, markers('c1', 'cluster-wide'), false],
    ['another cluster, same namespace', teamA, markers('c2', 'namespace/team-a'), false],
    ['no scope marker (older pod or made by hand)', teamA, markers('c1', undefined), false],
    ['no markers at all', teamA, markers(undefined, undefined), false],
    ['cluster-wide install, its own pod', clusterWide, markers('c1', 'cluster-wide'), true],
    ['cluster-wide install, a namespace-scoped install\'s pod', clusterWide, markers('c1', 'namespace/team-a'), false],
    ['cluster-wide install, no scope marker', clusterWide, markers('c1', undefined), false],
    ['cluster-wide install, a namespace literally named cluster-wide', clusterWide, markers('c1', 'namespace/cluster-wide'), false],
  ];
  for (const [name, owner, env, owned] of cases) {
    test(`${name}: ${owned ? 'owned' : 'foreign'}`, () => assert.equal(ownsPod(owner, env), owned));
  }
});
