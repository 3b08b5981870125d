// Helpers for tests anywhere in the project: an account's network volumes and registry credentials,
// made through the simulator's v2 API as a user would make them before a run (or preset in its config:
// `networkVolumes`, `registries`, README "Config").
import { z } from 'zod';

export const simVolumeSchema = z.strictObject({
  id: z.string(),
  name: z.string(),
  size: z.number(),
  dataCenter: z.string(),
  type: z.enum(['STANDARD', 'HIGH_PERFORMANCE']),
});
export type SimVolume = z.infer<typeof simVolumeSchema>;

/** Exactly {id, name}: a registry credential's username and password are never answered. */
export const simRegistrySchema = z.strictObject({ id: z.string(), name: z.string() });
export type SimRegistry = z.infer<typeof simRegistrySchema>;

async function post(url: string, key: string, body: unknown): Promise<unknown> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`POST ${url}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** POST /v2/network-volumes; `baseUrl` is the simulator's `.../v2`. */
export async function createSimVolume(baseUrl: string, key: string, volume: { name: string; size: number; dataCenter: string; type?: SimVolume['type'] }): Promise<SimVolume> {
  return simVolumeSchema.parse(await post(`${baseUrl}/network-volumes`, key, volume));
}

/** POST /v2/registries: the id a pod create's `registry` names. */
export async function createSimRegistry(baseUrl: string, key: string, registry: { name: string; username: string; password: string }): Promise<SimRegistry> {
  return simRegistrySchema.parse(await post(`${baseUrl}/registries`, key, registry));
}
