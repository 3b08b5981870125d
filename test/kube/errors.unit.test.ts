import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiException } from '@kubernetes/client-node';
import {
  ConflictError, TerminalError, describeError, isAbort, isAlreadyExists, isApiStatus, isConflict, isGone, isNotFound, isTransient, reasonOf, statusOf,
} from '../../src/kube/errors.ts';
import { registerSecret } from '../../src/log.ts';

const apiError = (code: number, body: unknown) =>
  new ApiException(code, `HTTP-Code: ${code}\nMessage: Unknown API Status Code!\nBody: ...`, body, { 'content-type': 'application/json' });
const status = (code: number, reason: string, message = 'm') => JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });

void test('reads the code and the Status out of an ApiException whose body is a string', () => {
  const err = apiError(409, status(409, 'Conflict', 'the object has been modified'));
  assert.equal(isApiStatus(err, 409), true);
  assert.equal(reasonOf(err), 'Conflict');
  assert.equal(statusOf(err)?.message, 'the object has been modified');
  assert.equal(isConflict(err), true);
  assert.equal(isAlreadyExists(err), false);
});

void test('AlreadyExists is a 409 but not a conflict', () => {
  const err = apiError(409, status(409, 'AlreadyExists'));
  assert.equal(isAlreadyExists(err), true);
  assert.equal(isConflict(err), false);
});

void test('bodies that are not JSON, objects or missing are tolerated', () => {
  assert.equal(reasonOf(apiError(401, undefined)), undefined);
  assert.equal(reasonOf(apiError(502, '<html>bad gateway</html>')), undefined);
  assert.equal(reasonOf(apiError(404, { reason: 'NotFound' })), 'NotFound');
  assert.equal(reasonOf(apiError(404, 'null')), undefined);
  assert.equal(isNotFound(apiError(404, undefined)), true);
  assert.equal(reasonOf('a string'), undefined);
  assert.equal(reasonOf(null), undefined);
});

void test("Watch's statusCode errors and a 410 are recognised", () => {
  const err = Object.assign(new Error('Gone'), { statusCode: 410 });
  assert.equal(isGone(err), true);
  assert.equal(isGone(apiError(410, status(410, 'Expired'))), true);
});

void test('ConflictError and TerminalError', () => {
  const c = new ConflictError('stale', { cause: apiError(409, status(409, 'Conflict')) });
  assert.equal(isConflict(c), true);
  assert.equal(isApiStatus(c, 409), true);
  assert.equal(new TerminalError('no').name, 'TerminalError');
});

void test('undici network failures, timeouts, 429 and 5xx are transient; 4xx and bugs are not', () => {
  const fetchFailed = new TypeError('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }) });
  const terminated = new TypeError('terminated', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) });
  assert.equal(isTransient(fetchFailed), true);
  assert.equal(isTransient(terminated), true);
  assert.equal(isTransient(new TypeError('terminated')), true);
  assert.equal(isTransient(Object.assign(new Error('x'), { code: 'ECONNRESET' })), true);
  assert.equal(isTransient(new DOMException('timed out', 'TimeoutError')), true);
  assert.equal(isTransient(apiError(429, status(429, 'TooManyRequests'))), true);
  assert.equal(isTransient(apiError(503, undefined)), true);
  assert.equal(isTransient(apiError(422, status(422, 'Invalid'))), false);
  assert.equal(isTransient(new TypeError('x is not a function')), false);
  assert.equal(isTransient(undefined), false);
  assert.equal(isAbort(new DOMException('aborted', 'AbortError')), true);
});

void test('describeError is short, drops the ApiException noise, and redacts', () => {
  registerSecret('sk_live_SUPERSECRET_9876');
  assert.equal(describeError(apiError(409, status(409, 'Conflict', 'modified'))), 'HTTP 409 Conflict: modified');
  assert.equal(describeError(apiError(401, undefined)), 'HTTP 401');
  const fetchFailed = new TypeError('fetch failed', { cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }) });
  assert.equal(describeError(fetchFailed), 'fetch failed (ECONNREFUSED)');
  assert.equal(describeError(new Error('key sk_live_SUPERSECRET_9876 refused')), 'key [REDACTED] refused');
  assert.equal(describeError('plain'), 'plain');
});
