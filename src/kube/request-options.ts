// Per-call options for client-node's generated API methods: a request timeout (they have none of
// their own, so a hung connection would hang a lease renewal past its deadline) and a Content-Type.
import {
  Observable, setHeaderOptions,
  type ConfigurationOptions, type ObservableMiddleware, type PatchStrategy, type RequestContext, type ResponseContext,
} from '@kubernetes/client-node';

function timeoutMiddleware(timeoutMs: number): ObservableMiddleware {
  return {
    pre: (ctx: RequestContext) => {
      ctx.setSignal(AbortSignal.timeout(Math.max(1, Math.round(timeoutMs))));
      return new Observable(Promise.resolve(ctx));
    },
    post: (response: ResponseContext) => new Observable(Promise.resolve(response)),
  };
}

export function requestOptions(opts: { timeoutMs?: number; contentType?: PatchStrategy }): ConfigurationOptions {
  const middleware = opts.timeoutMs === undefined ? [] : [timeoutMiddleware(opts.timeoutMs)];
  const options: ConfigurationOptions = { middleware, middlewareMergeStrategy: 'append' };
  return opts.contentType ? setHeaderOptions('Content-Type', opts.contentType, options) : options;
}
