// The seam through which a run is observed (tracing, tracing.ts): what the session and call admission
// tell an observer, and nothing else. Kept apart so the engine's files carry one line per hook.
import type { RequestFrame } from "../../protocol/frames.js";
import type { Outcome } from "../../protocol/outcome.js";
import type { LogEntry } from "../api/types.js";

/**
 * @internal Watches one run. The session calls it as frames cross the wire; none of its methods may
 * throw or hold the run up (the implementation guards its own calls).
 */
export interface RunObserver {
  /** The run's W3C trace context, sent in the invoke frame when set. */
  readonly traceparent: string | undefined;
  /** A request frame arrived (`line` is the frame as read, for its size). */
  requested(frame: RequestFrame, line: string): void;
  /** The reply to request `id` is being sent (`line` is the reply frame, for its size). */
  replied(id: number, outcome: Outcome, line: string): void;
  /** A log frame arrived. */
  logged(entry: LogEntry): void;
  /**
   * A step of the run before the guest starts (runCode's type check, span "ears.typecheck") begins; the
   * returned function ends it, with the problem it found (undefined: none).
   */
  step?(name: string): (problem: string | undefined) => void;
}
