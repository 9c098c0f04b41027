// A scripted in-process host for guest tests: drives `serve` over an in-memory linked pair and reads
// back what the guest wrote, decoded with the one frame codec.
import { decodeFrame, encodeFrame, type GuestFrame, type HostFrame, type RequestFrame } from "../../src/protocol/frames.js";
import type { Json } from "../../src/protocol/json.js";
import type { Outcome } from "../../src/protocol/outcome.js";
import { serve, type GuestProgram, type ServeReport } from "../../src/guest/serve.js";
import { createLinkedPair, type MemoryWire } from "../../src/wires/memory.js";

/** A guest being served on one end of a memory pair, and the host's end. */
export class MemoryGuest {
  /** Raw lines the guest wrote, in order. */
  readonly lines: string[] = [];
  readonly report: Promise<ServeReport>;

  constructor(
    run: GuestProgram,
    readonly host: MemoryWire,
    guest: MemoryWire,
  ) {
    this.report = serve({ wire: guest, run });
  }

  /** The next frame the guest wrote, or `undefined` once the guest closed its end. */
  async next(): Promise<GuestFrame | undefined> {
    const line = await this.host.receive();
    if (line === undefined) return undefined;
    this.lines.push(line);
    return decodeFrame(line) as GuestFrame;
  }

  /** The next frame, which must be of `type`. */
  async expect<T extends GuestFrame["type"]>(type: T): Promise<Extract<GuestFrame, { type: T }>> {
    const frame = await this.next();
    if (frame?.type !== type) throw new Error(`expected a ${type} frame, got ${JSON.stringify(frame)}`);
    return frame as Extract<GuestFrame, { type: T }>;
  }

  send(frame: HostFrame): Promise<void> {
    return this.host.send(encodeFrame(frame));
  }

  sendLine(line: string): Promise<void> {
    return this.host.send(line);
  }

  /** Takes hello, then sends a protocol 1 invoke. */
  async invoke(allowed: string[], input: Json = null, protocol = 1): Promise<void> {
    await this.expect("hello");
    await this.send({ type: "invoke", protocol, allowed, input });
  }

  /** Every remaining frame until the guest closes its end. */
  async rest(): Promise<GuestFrame[]> {
    const frames: GuestFrame[] = [];
    for (let frame = await this.next(); frame !== undefined; frame = await this.next()) frames.push(frame);
    return frames;
  }

  reply(id: number, outcome: Outcome): Promise<void> {
    return this.send({ type: "reply", id, outcome });
  }
}

/** Starts `serve` with `run` on a fresh memory pair. */
export function startGuest(run: GuestProgram): MemoryGuest {
  const [guest, host] = createLinkedPair();
  return new MemoryGuest(run, host, guest);
}

/**
 * Runs a guest to the end under a host that answers every request with `answer(request)` (no reply when
 * it returns undefined). Returns every frame after hello, and the serve report.
 */
export async function runScriptedGuest(
  run: GuestProgram,
  options: { allowed?: string[]; input?: Json; answer?: (request: RequestFrame) => Outcome | undefined } = {},
): Promise<{ frames: GuestFrame[]; report: ServeReport; requests: RequestFrame[]; guest: MemoryGuest }> {
  const guest = startGuest(run);
  await guest.invoke(options.allowed ?? [], options.input ?? null);
  const frames: GuestFrame[] = [];
  const requests: RequestFrame[] = [];
  for (let frame = await guest.next(); frame !== undefined; frame = await guest.next()) {
    frames.push(frame);
    if (frame.type === "request") {
      requests.push(frame);
      const outcome = options.answer?.(frame);
      if (outcome !== undefined) await guest.reply(frame.id, outcome);
    }
  }
  return { frames, report: await guest.report, requests, guest };
}

/** The result frame's outcome; fails when there is not exactly one result, last. */
export function resultOf(frames: GuestFrame[]): Outcome {
  const results = frames.filter((f) => f.type === "result");
  const last = frames.at(-1);
  if (results.length !== 1 || last?.type !== "result") throw new Error(`expected exactly one result, last; got ${JSON.stringify(frames)}`);
  return last.outcome;
}
