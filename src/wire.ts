/**
 * The transport seam. A wire moves whole frames: one line of JSON text per call, without the newline.
 * The runtime calls `send` in frame order, sometimes before the previous send settled, so a wire must
 * deliver frames in the order `send` was called. A user-written Wire with only `send` and `receive`
 * works with `serve`.
 */
export interface Wire {
  /** Writes one frame. Settles when the frame is handed to the transport; rejects when it cannot be written. */
  send(frame: string): Promise<void>;
  /** Returns the next frame, or `undefined` at the end of the stream. Rejects when the stream is broken. */
  receive(): Promise<string | undefined>;
  /**
   * Called once when the session is over: release the transport so the process can exit. `failure`
   * is set when the session broke (no result was written), for the wire to report.
   */
  close?(failure?: Error): Promise<void> | void;
}
