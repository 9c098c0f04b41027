/**
 * Turns a conformance vector's language-neutral `program` (see wire/vectors/README.md) into an ears guest
 * program. Plain JavaScript so the spawned vector guest can run it with bare `node`; `Outcome` is passed in
 * so outcomes it makes are recognised by the same copy of the runtime that serves (src/ in process, dist/
 * in the child).
 */

/** A value JSON cannot carry unchanged: what `argumentsUnrepresentable` passes as arguments. */
const UNREPRESENTABLE_ARGUMENTS = { value: Number.NaN };
/** What `returnUnrepresentable` returns. */
const UNREPRESENTABLE_RESULT = { value: 10n };

/**
 * @param {readonly Record<string, unknown>[]} steps
 * @param {{ Outcome: { success: Function, failure: Function } }} runtime
 * @returns {(ears: any, input: unknown) => Promise<unknown>}
 */
export function vectorProgram(steps, { Outcome }) {
  return async (ears, input) => {
    /** Calls started with `"wait": false`, by bind name. */
    const started = new Map();
    /** Outcomes of finished calls, by bind name. */
    const outcomes = new Map();
    const startedCall = (name) => {
      const call = started.get(name);
      if (call === undefined) throw new Error(`vector program: no call was started with "bind": ${JSON.stringify(name)}`);
      return call;
    };
    for (const step of steps) {
      if ("call" in step) {
        const controller = new AbortController();
        const args = step.argumentsUnrepresentable ? UNREPRESENTABLE_ARGUMENTS : step.arguments;
        const promise = ears.call(step.call, args, { signal: controller.signal });
        if (step.wait === false) started.set(step.bind, { promise, controller });
        else {
          const outcome = await promise;
          if (step.bind !== undefined) outcomes.set(step.bind, outcome);
        }
      } else if ("wait" in step) {
        outcomes.set(step.wait, await startedCall(step.wait).promise);
      } else if ("cancel" in step) {
        startedCall(step.cancel).controller.abort();
      } else if ("log" in step) {
        await ("level" in step ? ears.log(step.log, step.level) : ears.log(step.log));
      } else if ("close" in step) {
        ears.close();
      } else if ("return" in step) {
        return step.return;
      } else if ("returnNothing" in step) {
        return undefined;
      } else if ("returnInput" in step) {
        return input;
      } else if ("returnTraceparent" in step) {
        return ears.traceparent ?? null;
      } else if ("returnOutcome" in step) {
        const { status, code, content, structured } = step.returnOutcome;
        return status === "failure" ? Outcome.failure(code, content, structured) : Outcome.success(content, structured);
      } else if ("returnOutcomeOf" in step) {
        return outcomes.get(step.returnOutcomeOf);
      } else if ("returnContentsOf" in step) {
        return step.returnContentsOf.map((name) => outcomes.get(name).content);
      } else if ("returnUnrepresentable" in step) {
        return UNREPRESENTABLE_RESULT;
      } else if ("throw" in step) {
        throw new Error(step.throw);
      } else {
        throw new Error(`vector program: unknown step ${JSON.stringify(step)}`);
      }
    }
    return undefined;
  };
}
