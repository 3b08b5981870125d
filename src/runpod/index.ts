// The Runpod REST v2 client's public surface; the rest of the operator imports from here only.
export {
  createRunpodClient,
  DEFAULT_BASE_URL,
  DEFAULT_RETRY,
  DEFAULT_TIMEOUTS,
  DEFAULT_USER_AGENT,
  type CallOptions,
  type ListGpuTypesOptions,
  type RetryPolicy,
  type RunpodCallObserver,
  type RunpodClient,
  type RunpodClientOptions,
  type RunpodTimeouts,
} from './client.ts';
export {
  RUNPOD_ERROR_KINDS,
  RunpodError,
  classifyResponse,
  classifyTransport,
  isAccountProblem,
  isAmbiguous,
  isCapacityError,
  isSpendLimit,
  isNotFound,
  isRateLimited,
  isRetryable,
  isRunpodError,
  type RunpodErrorKind,
  type RunpodOperation,
} from './errors.ts';
export {
  RateLimiter,
  RateLimitWaitTimeout,
  rateLimiterForKey,
  type CallPriority,
  type Permit,
  type RateLimiterOptions,
  type RateLimiterSnapshot,
} from './rate-limiter.ts';
export { parseRateLimit, parseRateLimitPolicy, parseRetryAfter } from './rate-limit-headers.ts';
export {
  normalizeDataCenter,
  normalizeGpuType,
  podPricePerHour,
  rankGpuTypes,
  type Cloud,
  type CloudOffer,
  type DataCenterInfo,
  type GpuTypeOffer,
  type RankCriteria,
  type StockLevel,
} from './catalog.ts';
export { validateBaseUrl } from './http.ts';
export { redactText } from './redact.ts';
export { systemClock, type Clock } from './clock.ts';
export {
  POD_ACTIONS,
  POD_STATUSES,
  podSchema,
  createPodRequestSchema,
  type AccountLimits,
  type Availability,
  type CreatePodRequest,
  type Pod,
  type PodAction,
  type PodSshEndpoint,
  type PodStatus,
} from './schemas.ts';
