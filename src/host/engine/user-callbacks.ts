/** Calls the user's callbacks (onLog, onFrame, onStderr) so that a throw never breaks a run. */
import { describeError } from "../../protocol/errors.js";

/**
 * Runs user callbacks for one run. A throw is ignored so the run goes on; the first throw from each
 * callback is reported as a process warning (`EarsHostWarning`), later ones are silent.
 */
export class UserCallbacks {
  private readonly failed = new Set<string>();

  /** Calls `call`; `name` is the option's name, used in the warning. */
  run(name: string, call: () => void): void {
    try {
      call();
    } catch (error) {
      if (this.failed.has(name)) return;
      this.failed.add(name);
      process.emitWarning(
        `options.${name} threw (${describeError(error)}); the run goes on and later errors from it are ignored`,
        "EarsHostWarning",
      );
    }
  }
}
