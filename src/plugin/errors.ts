// What the plugin says when it cannot do what was asked: one sentence, a non-zero exit, never a trace.
export class PluginError extends Error {
  readonly exitCode: number;

  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = 'PluginError';
    this.exitCode = exitCode;
  }
}
