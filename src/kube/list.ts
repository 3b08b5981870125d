// One page of a LIST for any resource path, through the KubeConfig's auth and TLS. The generated
// clients need a typed method per resource; the reflector needs one generic call, like Watch's.
import { ApiException, HttpMethod, RequestContext, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { fetch } from 'undici';

export interface ListPage<T extends KubernetesObject> {
  items: T[];
  resourceVersion: string;
  /** Set when more pages follow. */
  continueToken?: string;
}

export interface ListParams {
  limit?: number;
  continueToken?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

interface RawList {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: unknown;
}

export async function listPage<T extends KubernetesObject>(
  kubeConfig: KubeConfig,
  path: string,
  params: ListParams,
  signal?: AbortSignal,
): Promise<ListPage<T>> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const url = new URL(cluster.server + path);
  if (params.limit) url.searchParams.set('limit', String(params.limit));
  if (params.continueToken) url.searchParams.set('continue', params.continueToken);
  if (params.labelSelector) url.searchParams.set('labelSelector', params.labelSelector);
  if (params.fieldSelector) url.searchParams.set('fieldSelector', params.fieldSelector);
  const ctx = new RequestContext(url.toString(), HttpMethod.GET);
  await kubeConfig.applySecurityAuthentication(ctx);
  const headers = ctx.getHeaders();
  headers.accept = 'application/json';
  const response = await fetch(url, { method: 'GET', headers, dispatcher: ctx.getDispatcher(), signal });
  const text = await response.text();
  if (response.status < 200 || response.status > 299) {
    throw new ApiException<string>(response.status, `HTTP-Code: ${response.status}`, text, Object.fromEntries(response.headers));
  }
  const body = JSON.parse(text) as RawList;
  if (!Array.isArray(body.items)) throw new Error(`LIST ${path}: response has no items`);
  return {
    items: body.items as T[],
    resourceVersion: body.metadata?.resourceVersion ?? '',
    continueToken: body.metadata?.continue || undefined,
  };
}
