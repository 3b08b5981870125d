// The GPU and data-center catalogs, reduced to what choosing a GPU type needs: per-cloud price and
// ceiling, stock overall and per data center. Catalog stock lags reality (an "in stock" type can
// still refuse a create), so ranking only orders the candidates; the create call decides.
import type { Availability, RawDataCenter, RawGpuType } from './schemas.ts';

export type Cloud = 'SECURE' | 'COMMUNITY';

export interface CloudOffer {
  /** Whether Runpod offers this type in the cloud at all (stock aside). */
  offered: boolean;
  /** List price in USD per hour for ONE GPU; null when Runpod gives none usable. */
  pricePerGpuHour: number | null;
  /** Most GPUs of this type one pod can have in this cloud (a ceiling, not stock). */
  maxCount: number | null;
}

export interface StockLevel {
  id: string;
  name: string;
  availability: Availability;
  inStock: boolean;
}

export interface GpuTypeOffer {
  id: string;
  name: string;
  manufacturer: string;
  memoryGb: number | null;
  secure: CloudOffer;
  community: CloudOffer;
  /** Overall stock for the cloud, count and CUDA floor the catalog was asked about. */
  availability: Availability;
  inStock: boolean;
  /** Stock per data center, for the same scope. */
  dataCenters: StockLevel[];
  cudaVersions: { version: string; available: boolean }[];
}

export interface DataCenterInfo {
  id: string;
  name: string;
  region: string;
  globalNetwork: boolean;
  gpuAvailability: StockLevel[];
}

const inStock = (a: Availability): boolean => a === 'LOW' || a === 'MEDIUM' || a === 'HIGH';
const price = (p: number | null): number | null => (p !== null && Number.isFinite(p) && p > 0 ? p : null);
// Catalog names end up in status fields and logs: no control characters (terminal escapes) in them.
const clean = (text: string | null | undefined): string =>
  [...(text ?? '')].map((ch) => (ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f ? ' ' : ch)).join('').trim();

function stock(entry: { id: string; name?: string | null | undefined; availability: Availability }): StockLevel {
  return { id: entry.id, name: clean(entry.name) || entry.id, availability: entry.availability, inStock: inStock(entry.availability) };
}

export function normalizeGpuType(raw: RawGpuType): GpuTypeOffer {
  return {
    id: raw.id,
    name: clean(raw.name) || raw.id,
    manufacturer: clean(raw.manufacturer) || 'UNKNOWN',
    memoryGb: raw.memory !== null && raw.memory > 0 ? raw.memory : null,
    // The spec marks the cloud flags required; when one is missing, assume offered and let stock decide.
    secure: { offered: raw.secure !== false, pricePerGpuHour: price(raw.price?.secure ?? null), maxCount: raw.maxCount?.secure ?? null },
    community: { offered: raw.community !== false, pricePerGpuHour: price(raw.price?.community ?? null), maxCount: raw.maxCount?.community ?? null },
    availability: raw.availability,
    inStock: inStock(raw.availability),
    dataCenters: (raw.dataCenters ?? []).map(stock),
    cudaVersions: (raw.cudaVersions ?? []).map((c) => ({ version: c.version, available: c.available === true })),
  };
}

export function normalizeDataCenter(raw: RawDataCenter): DataCenterInfo {
  return {
    id: raw.id,
    name: clean(raw.name) || raw.id,
    region: clean(raw.region) || 'UNKNOWN',
    globalNetwork: raw.globalNetwork === true,
    gpuAvailability: (raw.gpuAvailability ?? []).map(stock),
  };
}

export interface RankCriteria {
  cloud: Cloud;
  gpuCount: number;
  minVramGb?: number | undefined;
  /** Cap on the whole pod's list price: price per GPU x gpuCount. */
  maxPricePerHour?: number | undefined;
  /** When set, a type must be in stock in at least one of these (not checked with includeOutOfStock). */
  dataCenterIds?: readonly string[] | undefined;
  /** Types the catalog says are out of stock too (stock changes by the minute; a create is the real test). */
  includeOutOfStock?: boolean | undefined;
}

function offerFor(offer: GpuTypeOffer, cloud: Cloud): CloudOffer {
  return cloud === 'SECURE' ? offer.secure : offer.community;
}

/** Pod price per hour for `gpuCount` GPUs of this type in `cloud`, or null when unpriced. */
export function podPricePerHour(offer: GpuTypeOffer, cloud: Cloud, gpuCount: number): number | null {
  const p = offerFor(offer, cloud).pricePerGpuHour;
  return p === null ? null : p * gpuCount;
}

/**
 * The types that satisfy the criteria and are reported in stock (or, with includeOutOfStock, offered), cheapest first (ties: more VRAM, then
 * id). The catalog must have been read for the same cloud and GPU count: its stock is scoped to them.
 */
export function rankGpuTypes(offers: readonly GpuTypeOffer[], criteria: RankCriteria): GpuTypeOffer[] {
  const { cloud, gpuCount, minVramGb, maxPricePerHour, dataCenterIds, includeOutOfStock = false } = criteria;
  const wanted = dataCenterIds && dataCenterIds.length > 0 ? new Set(dataCenterIds) : undefined;
  const fits = offers.filter((o) => {
    const c = offerFor(o, cloud);
    if (!c.offered || (!o.inStock && !includeOutOfStock)) return false;
    if (c.maxCount !== null && c.maxCount < gpuCount) return false;
    if (minVramGb !== undefined && (o.memoryGb === null || o.memoryGb < minVramGb)) return false;
    const podPrice = podPricePerHour(o, cloud, gpuCount);
    if (maxPricePerHour !== undefined && (podPrice === null || podPrice > maxPricePerHour)) return false;
    // The catalog lists only data centers with stock: out of stock, the create's dataCenterIds decide.
    if (wanted && !includeOutOfStock && !o.dataCenters.some((dc) => dc.inStock && wanted.has(dc.id))) return false;
    return true;
  });
  return fits.sort((a, b) => {
    const pa = offerFor(a, cloud).pricePerGpuHour ?? Number.POSITIVE_INFINITY;
    const pb = offerFor(b, cloud).pricePerGpuHour ?? Number.POSITIVE_INFINITY;
    if (pa !== pb) return pa - pb;
    const va = a.memoryGb ?? 0;
    const vb = b.memoryGb ?? 0;
    if (va !== vb) return vb - va;
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  });
}
