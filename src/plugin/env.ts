// The controller's variable for its --runpod-api-url, which the plugin honours too (a module of its own:
// the usage names it, and naming it must not load the system logs' HTTP client).
export const RUNPOD_API_URL_ENV = 'RUNPOD_OPERATOR_RUNPOD_API_URL';
