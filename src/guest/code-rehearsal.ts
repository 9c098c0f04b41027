/**
 * A pooled code runner's rehearsal (issue 33). V8 compiles a function the first time it runs and makes
 * faster code for what runs often, so a fresh runner's one real session paid for compiling its own call
 * path (the stream wire, the frame codec and its validators, serve, Ears, the body's compiling): about a
 * millisecond of a pooled run's four, measured. A runner that has time before its body (a pool's, told so
 * by the warm frame, wire/PROTOCOL.md section 12) runs one made-up session through the same code first,
 * against a made-up host in this process, over two in-memory streams. Nothing of it leaves the process or
 * stays for the body: no global is set, no handler is added to `process`, nothing is written to stdout or
 * stderr, and the host never sees its frames.
 */
import { PassThrough } from "node:stream";
import { decodeLine, encodeFrame, PROTOCOL } from "../protocol/frames.js";
import type { Json } from "../protocol/json.js";
import { streamWire } from "../wires/stream-wire.js";
import type { Wire } from "../wires/wire.js";

/** The rehearsal's body: calls (enough for V8 to start making faster code for their path), a log and a JSON result. */
export const REHEARSAL_BODY =
  'let r;\nfor (let i = 0; i < 16; i++) r = await ears.call("rehearsal", { n: i, text: "ü" });\n' +
  'await ears.log("rehearsal");\n' +
  'if (r.status === "failure") return r;\n' +
  'return { n: r.structured.n + input.n, list: [1, "a", null, true, { x: 1.5 }] };';

const REHEARSAL_INPUT: Json = { n: 1, text: "input" };
const REHEARSAL_REPLY: Json = { n: 2, list: ["a", 1, false, null] };

/**
 * Runs one session of {@link REHEARSAL_BODY} through `serveBody` (the runner's own serving of a body on a
 * wire), answering as a host would; settles when the session is over. Never rejects: a rehearsal that goes
 * wrong costs only the time it took, and the real session runs as it would have.
 */
export async function rehearse(serveBody: (wire: Wire, javascript: string) => Promise<unknown>): Promise<void> {
  const toRunner = new PassThrough();
  const fromRunner = new PassThrough();
  const runnerEnd = streamWire({ input: toRunner, output: fromRunner });
  const hostEnd = streamWire({ input: fromRunner, output: toRunner });
  try {
    await Promise.all([serveBody(runnerEnd, REHEARSAL_BODY), answer(hostEnd)]);
  } catch {
    // Nothing to report: see above.
  } finally {
    await Promise.allSettled([runnerEnd.close(), hostEnd.close()]);
    toRunner.destroy();
    fromRunner.destroy();
  }
}

/** The made-up host: the invoke after hello, a reply to each request, until the result. */
async function answer(wire: Wire): Promise<void> {
  if ((await wire.receive()) === undefined) return;
  await wire.send(encodeFrame({ type: "invoke", protocol: PROTOCOL, allowed: ["rehearsal"], input: REHEARSAL_INPUT }));
  for (;;) {
    const line = await wire.receive();
    if (line === undefined) return;
    const decoded = decodeLine(line);
    if (!("frame" in decoded)) return;
    const { frame } = decoded;
    if (frame.type === "result") return;
    if (frame.type === "request") {
      await wire.send(
        encodeFrame({ type: "reply", id: frame.id, outcome: { status: "success", content: "", structured: REHEARSAL_REPLY } }),
      );
    }
  }
}
