// Requests served, counted by caller kind, method, path template and status, so a test can count
// exactly what a client asked (the controller's account-key calls apart from pod watchdogs' calls).
export type Caller = 'account' | 'pod' | 'anonymous';

export interface StatsEntry {
  caller: Caller;
  method: string;
  path: string;
  /** 0 for a request that got no answer (create-timeout fault, client gave up). */
  status: number;
  count: number;
}

export class RequestStats {
  private readonly counts = new Map<string, StatsEntry>();

  record(caller: Caller, method: string, path: string, status: number): void {
    const key = `${caller} ${method} ${path} ${status}`;
    const entry = this.counts.get(key);
    if (entry) entry.count += 1;
    else this.counts.set(key, { caller, method, path, status, count: 1 });
  }

  snapshot(): { requests: StatsEntry[]; total: number } {
    const requests = [...this.counts.values()].map((entry) => ({ ...entry }));
    requests.sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method) || a.status - b.status || a.caller.localeCompare(b.caller));
    return { requests, total: requests.reduce((sum, entry) => sum + entry.count, 0) };
  }

  reset(): void {
    this.counts.clear();
  }
}
