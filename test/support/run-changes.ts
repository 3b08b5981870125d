// Wakes a test's waits on its namespace's runs at their next change: one watch per world, opened at
// the first wait. A wait still looks on its own every few seconds (a watch can end quietly), so the
// watch only makes it sooner: a run's phase is seen within a few milliseconds of its write instead
// of up to half a second later, and a waiting test sends one GET every few seconds instead of two a second.
import { Watch, type KubeConfig } from '@kubernetes/client-node';

export class RunChanges {
  readonly #kubeConfig: KubeConfig;
  readonly #path: string;
  /** Counts the events seen: a wait that read the run at generation g wakes at once if it moved since. */
  #generation = 0;
  readonly #wakers = new Set<() => void>();
  #watch: Promise<AbortController> | undefined;
  #openedAt = 0;
  #stopped = false;

  constructor(kubeConfig: KubeConfig, path: string) {
    this.#kubeConfig = kubeConfig;
    this.#path = path;
  }

  get generation(): number {
    return this.#generation;
  }

  /** Resolves once a run changed after `generation` was read, or after `ms`, whichever is first. */
  after(generation: number, ms: number): Promise<void> {
    this.#open();
    if (this.#generation > generation) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.#wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#wakers.add(wake);
    });
  }

  /** Closes the watch and ends every wait: an open watch or a pending timer would keep the test's process alive. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const wake of [...this.#wakers]) wake();
    const watch = this.#watch;
    this.#watch = undefined;
    (await watch?.catch(() => undefined))?.abort();
  }

  #open(): void {
    // A watch refused at once (a 429 while the API server starts) is opened again by a later wait, at most once a second.
    if (this.#watch || this.#stopped || Date.now() - this.#openedAt < 1000) return;
    this.#openedAt = Date.now();
    const ended = (): void => {
      // Once only, and never for a later watch: one left unreferenced would outlive stop().
      if (this.#watch !== watch) return;
      this.#watch = undefined;
      // Its waits look again now (and open the next watch): none is left waiting out its whole pause blind.
      for (const wake of [...this.#wakers]) wake();
    };
    const watch = new Watch(this.#kubeConfig).watch(this.#path, {}, () => {
      this.#generation += 1;
      for (const wake of [...this.#wakers]) wake();
    }, ended);
    watch.catch(ended);
    this.#watch = watch;
  }
}
