// The account's resources beside pods: network volumes (openapi-v2.json NetworkVolume, each bound to
// one data center) and registry credentials (Registry: username and password are write-only, kept
// here only to decide whether a private image pulls, pull.ts). Each belongs to the account key that
// created it; a preset one without an `owner` (config networkVolumes, registries) to every account key.
import { randomInt } from 'node:crypto';
import type { SimConfig } from './config.ts';
import type { PodRecord } from './state.ts';

export type VolumeType = SimConfig['dataCenters'][number]['networkVolumeTypes'][number];

export interface NetworkVolume {
  id: string;
  name: string;
  size: number;
  dataCenter: string;
  type: VolumeType;
  /** The account key that owns it; null: every account key (a preset without `owner`). */
  owner: string | null;
}

export interface RegistryCredential {
  id: string;
  name: string;
  username: string;
  password: string;
  owner: string | null;
}

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** The volume a pod mounts (`mounts.network[0].volumeId`), if any. */
export function mountedVolumeId(pod: { spec: Pick<PodRecord['spec'], 'mounts'> }): string | undefined {
  return (pod.spec.mounts as { network?: { volumeId: string }[] }).network?.[0]?.volumeId;
}

export class SimResources {
  private readonly volumes = new Map<string, NetworkVolume>();
  private readonly registries = new Map<string, RegistryCredential>();

  constructor(config: SimConfig) {
    for (const preset of config.networkVolumes) {
      const dc = config.dataCenters.find((candidate) => candidate.id === preset.dataCenter);
      // config.ts has checked that the data center exists and offers the tier.
      const type = preset.type ?? dc?.networkVolumeTypes[0] ?? 'STANDARD';
      this.volumes.set(preset.id, { id: preset.id, name: preset.name, size: preset.size, dataCenter: preset.dataCenter, type, owner: preset.owner ?? null });
    }
    for (const preset of config.registries) {
      this.registries.set(preset.id, { ...preset, owner: preset.owner ?? null });
    }
  }

  volumesOf(account: string): NetworkVolume[] {
    return [...this.volumes.values()].filter((volume) => owns(account, volume));
  }

  /** The account's volume, or undefined (unknown, or another account's). */
  volume(account: string, id: string): NetworkVolume | undefined {
    const volume = this.volumes.get(id);
    return volume && owns(account, volume) ? volume : undefined;
  }

  addVolume(account: string, fields: Omit<NetworkVolume, 'id' | 'owner'>): NetworkVolume {
    const volume: NetworkVolume = { ...fields, id: freshId(this.volumes), owner: account };
    this.volumes.set(volume.id, volume);
    return volume;
  }

  deleteVolume(id: string): void {
    this.volumes.delete(id);
  }

  registriesOf(account: string): RegistryCredential[] {
    return [...this.registries.values()].filter((registry) => owns(account, registry));
  }

  registry(account: string, id: string): RegistryCredential | undefined {
    const registry = this.registries.get(id);
    return registry && owns(account, registry) ? registry : undefined;
  }

  addRegistry(account: string, fields: Omit<RegistryCredential, 'id' | 'owner'>): RegistryCredential {
    const registry: RegistryCredential = { ...fields, id: freshId(this.registries), owner: account };
    this.registries.set(registry.id, registry);
    return registry;
  }

  deleteRegistry(id: string): void {
    this.registries.delete(id);
  }
}

function owns(account: string, resource: { owner: string | null }): boolean {
  return resource.owner === null || resource.owner === account;
}

/** Ten lowercase letters and digits, as Runpod's volume ids (openapi-v2.json example `agv6w2qcg7`). */
function freshId(taken: ReadonlyMap<string, unknown>): string {
  for (;;) {
    let id = '';
    for (let i = 0; i < 10; i += 1) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
    if (!taken.has(id)) return id;
  }
}

/** What GET /v2/network-volumes serves of a volume (openapi-v2.json NetworkVolume). */
export function volumeView(volume: NetworkVolume): Record<string, unknown> {
  return { id: volume.id, name: volume.name, size: volume.size, dataCenter: volume.dataCenter, type: volume.type };
}

/** What GET /v2/registries serves of a credential: never its username or password (write-only). */
export function registryView(registry: RegistryCredential): Record<string, unknown> {
  return { id: registry.id, name: registry.name };
}
