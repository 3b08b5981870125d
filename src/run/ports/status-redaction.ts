// The run's status is the one record anyone who may `kubectl get` the run reads: its free-text
// messages (the run's, each condition's, each attempt's) are redacted as every log line and event
// note is, whichever write carries them. The machine-read fields (ids, hosts, times) are left as
// they are: a secret never belongs in them, and changing them would change what decide reads.
import type { RunpodRunStatus } from '../../api/status.ts';
import { redact } from '../../log.ts';

export function redactStatus(status: RunpodRunStatus): RunpodRunStatus {
  const out: RunpodRunStatus = { ...status };
  if (out.message !== undefined) out.message = redact(out.message);
  if (out.conditions) out.conditions = out.conditions.map((condition) => ({ ...condition, message: redact(condition.message) }));
  if (out.attempts) out.attempts = out.attempts.map((attempt) => (attempt.message === undefined ? attempt : { ...attempt, message: redact(attempt.message) }));
  return out;
}
