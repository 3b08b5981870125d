import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type GpuTypeOffer, normalizeGpuType, podPricePerHour, rankGpuTypes } from '../../src/runpod/catalog.ts';
import { listGpuTypesResponseSchema } from '../../src/runpod/schemas.ts';

// Shapes as GET /v2/catalog/gpus?include=AVAILABILITY&product=POD answers them (openapi-v2 GpuType).
const raw = {
  gpus: [
    { id: 'NVIDIA GeForce RTX 4090', name: 'RTX 4090', manufacturer: 'NVIDIA', memory: 24, secure: true, community: true, price: { secure: 0.69, community: 0.34 }, maxCount: { secure: 8, community: 4 }, availability: 'HIGH', dataCenters: [{ id: 'EU-RO-1', name: 'EU Romania 1', availability: 'HIGH' }] },
    { id: 'NVIDIA A40', name: 'A40', manufacturer: 'NVIDIA', memory: 48, secure: true, community: false, price: { secure: 0.4, community: null }, maxCount: { secure: 8, community: 0 }, availability: 'LOW', dataCenters: [{ id: 'US-TX-3', name: 'US Texas 3', availability: 'LOW' }] },
    { id: 'NVIDIA RTX A6000', name: 'RTX A6000', manufacturer: 'NVIDIA', memory: 48, secure: true, community: true, price: { secure: 0.4, community: 0.33 }, maxCount: { secure: 4, community: 4 }, availability: 'MEDIUM', dataCenters: [{ id: 'EU-RO-1', name: 'EU Romania 1', availability: 'NONE' }, { id: 'US-TX-3', name: 'US Texas 3', availability: 'MEDIUM' }] },
    { id: 'NVIDIA H100 80GB HBM3', name: 'H100 SXM', manufacturer: 'NVIDIA', memory: 80, secure: true, community: false, price: { secure: 2.99, community: 0 }, maxCount: { secure: 8, community: 0 }, availability: 'NONE' },
    { id: 'NVIDIA A100 80GB PCIe', name: 'A100 PCIe', manufacturer: 'NVIDIA', memory: 80, secure: true, community: true, price: { secure: 'n/a', community: 1.19 }, maxCount: { secure: 2, community: 2 }, availability: 'HIGH' },
    { id: 'AMD Instinct MI300X OAM', name: 'MI300X\u001b[31m', manufacturer: 'AMD', memory: 192, secure: true, community: false, price: { secure: 2.49, community: null }, maxCount: { secure: 8, community: 0 }, availability: 'SOMETHING_NEW' },
  ],
};

const offers: GpuTypeOffer[] = listGpuTypesResponseSchema.parse(raw).gpus.map(normalizeGpuType);
const ids = (list: GpuTypeOffer[]): string[] => list.map((o) => o.id);

void describe('GPU catalog', () => {
  void it('normalises prices, stock and names', () => {
    const a100 = offers.find((o) => o.id === 'NVIDIA A100 80GB PCIe');
    assert.equal(a100?.secure.pricePerGpuHour, null, 'an unusable price is no price');
    const h100 = offers.find((o) => o.id === 'NVIDIA H100 80GB HBM3');
    assert.equal(h100?.community.pricePerGpuHour, null, 'a zero price is no price');
    assert.equal(h100?.inStock, false);
    const mi300 = offers.find((o) => o.id === 'AMD Instinct MI300X OAM');
    assert.equal(mi300?.availability, 'UNKNOWN');
    assert.equal(mi300?.inStock, false);
    assert.equal(mi300?.name, 'MI300X [31m', 'control characters never reach a status or a log');
  });

  void it('ranks the cheapest in-stock types with enough VRAM, ties by more VRAM then id', () => {
    assert.deepEqual(ids(rankGpuTypes(offers, { cloud: 'SECURE', gpuCount: 1 })), ['NVIDIA A40', 'NVIDIA RTX A6000', 'NVIDIA GeForce RTX 4090', 'NVIDIA A100 80GB PCIe']);
    assert.deepEqual(ids(rankGpuTypes(offers, { cloud: 'SECURE', gpuCount: 1, minVramGb: 40 })), ['NVIDIA A40', 'NVIDIA RTX A6000', 'NVIDIA A100 80GB PCIe']);
  });

  void it('with includeOutOfStock, also the types that fit but are out of stock now, in the same order', () => {
    const all = ids(rankGpuTypes(offers, { cloud: 'SECURE', gpuCount: 1, includeOutOfStock: true }));
    assert.ok(all.includes('NVIDIA H100 80GB HBM3'), all.join(', '));
    const inStock = ids(rankGpuTypes(offers, { cloud: 'SECURE', gpuCount: 1 }));
    assert.deepEqual(all.filter((id) => inStock.includes(id)), inStock);
  });

  void it('applies the price cap to the whole pod, and drops unpriced types under a cap', () => {
    assert.deepEqual(ids(rankGpuTypes(offers, { cloud: 'SECURE', gpuCount: 2, maxPricePerHour: 1.0 })), ['NVIDIA A40', 'NVIDIA RTX A6000']);
    assert.deepEqual(ids(rankGpuTypes(offers, { cloud: 'SECURE', gpuCount: 2, maxPricePerHour: 0.79 })), []);
    const a40 = offers.find((o) => o.id === 'NVIDIA A40');
    assert.ok(a40);
    assert.equal(podPricePerHour(a40, 'SECURE', 2), 0.8);
  });

  void it('respects the per-cloud ceiling and offer, and listed data centers', () => {
    assert.deepEqual(ids(rankGpuTypes(offers, { cloud: 'SECURE', gpuCount: 4 })), ['NVIDIA A40', 'NVIDIA RTX A6000', 'NVIDIA GeForce RTX 4090']);
    assert.deepEqual(ids(rankGpuTypes(offers, { cloud: 'COMMUNITY', gpuCount: 1 })), ['NVIDIA RTX A6000', 'NVIDIA GeForce RTX 4090', 'NVIDIA A100 80GB PCIe']);
    assert.deepEqual(ids(rankGpuTypes(offers, { cloud: 'SECURE', gpuCount: 1, dataCenterIds: ['EU-RO-1'] })), ['NVIDIA GeForce RTX 4090']);
  });
});
