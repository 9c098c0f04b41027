// The arbitraries the project exports must make what they promise: faithful JSON, frames that survive
// the codec exactly, valid sessions, garbage the codec rejects, chunkings that reassemble.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeFrame, encodeFrame, validateFrame } from "../../src/protocol/frames.js";
import { jsonProblem } from "../../src/protocol/json.js";
import { Outcome } from "../../src/protocol/outcome.js";
import * as arb from "../../src/testing/arbitraries.js";

describe("arbitraries", () => {
  it("jsonValue makes values jsonProblem accepts and JSON carries unchanged", () => {
    fc.assert(
      fc.property(arb.jsonValue(), (value) => {
        expect(jsonProblem(value)).toBeUndefined();
        expect(JSON.parse(JSON.stringify(value))).toEqual(value);
      }),
      { numRuns: 300 },
    );
  });

  it("jsonValue reaches the awkward corners: lone surrogates, U+2028, CR, LF, emoji, __proto__ keys, deep chains", () => {
    const seen = { lone: false, separator: false, cr: false, lf: false, emoji: false, proto: false, deep: false };
    const visit = (value: unknown, depth: number): void => {
      if (depth > 20) seen.deep = true;
      if (typeof value === "string") {
        if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(value)) seen.lone = true;
        if (value.includes("\u2028")) seen.separator = true;
        if (value.includes("\r")) seen.cr = true;
        if (value.includes("\n")) seen.lf = true;
        if (value.includes("🎉")) seen.emoji = true;
      } else if (Array.isArray(value)) value.forEach((v) => visit(v, depth + 1));
      else if (value !== null && typeof value === "object") {
        if (Object.hasOwn(value, "__proto__")) seen.proto = true;
        for (const [key, v] of Object.entries(value)) {
          visit(key, depth);
          visit(v, depth + 1);
        }
      }
    };
    for (const value of fc.sample(arb.jsonValue(), 3000)) visit(value, 0);
    expect(seen).toEqual({ lone: true, separator: true, cr: true, lf: true, emoji: true, proto: true, deep: true });
  });

  it("every frame arbitrary round-trips through the codec exactly", () => {
    fc.assert(
      fc.property(arb.frame(), (frame) => {
        const line = encodeFrame(frame);
        expect(decodeFrame(line)).toEqual(frame);
        expect(encodeFrame(decodeFrame(line))).toBe(line);
        expect(validateFrame(JSON.parse(line))).toEqual(frame);
      }),
      { numRuns: 500 },
    );
  });

  it("guest and host frame arbitraries keep to their side", () => {
    for (const f of fc.sample(arb.guestFrame(), 200)) expect(["hello", "request", "log", "result"]).toContain(f.type);
    for (const f of fc.sample(arb.hostFrame(), 200)) expect(["invoke", "reply"]).toContain(f.type);
  });

  const outcomesAProgramMayReturn =
    "outcome makes outcomes a program may return (recognised by the helpers' brand) with structured sometimes null, sometimes absent";
  it(outcomesAProgramMayReturn, () => {
    const outcomes = fc.sample(arb.outcome(), 500);
    expect(outcomes.some((o) => o.structured === null)).toBe(true);
    expect(outcomes.some((o) => !("structured" in o))).toBe(true);
    for (const o of outcomes) expect(Outcome.equal(Outcome.fromJson(Outcome.toJson(o)), o)).toBe(true);
  });

  it("session is a valid protocol 1 session", () => {
    fc.assert(
      fc.property(arb.session(), (steps) => {
        expect(steps[0]).toMatchObject({ from: "guest", frame: { type: "hello", protocol: 1 } });
        const invoke = steps[1]!;
        expect(invoke.from).toBe("host");
        if (invoke.frame.type !== "invoke") throw new Error("second step must be invoke");
        expect(steps.at(-1)).toMatchObject({ from: "guest", frame: { type: "result" } });
        expect(steps.filter((s) => s.frame.type === "result")).toHaveLength(1);
        const requested = new Set<number>();
        const answered = new Set<number>();
        let lastRequest = 0;
        for (const { from, frame } of steps.slice(2, -1)) {
          expect(encodeFrame(decodeFrame(encodeFrame(frame)))).toBe(encodeFrame(frame));
          if (frame.type === "request") {
            expect(from).toBe("guest");
            expect(frame.id).toBe(lastRequest + 1);
            lastRequest = frame.id;
            expect(invoke.frame.allowed).toContain(frame.name);
            requested.add(frame.id);
          } else if (frame.type === "reply") {
            expect(from).toBe("host");
            expect(requested.has(frame.id)).toBe(true);
            expect(answered.has(frame.id)).toBe(false);
            answered.add(frame.id);
          } else {
            expect(frame.type).toBe("log");
            expect(from).toBe("guest");
          }
        }
        expect(answered).toEqual(requested);
      }),
      { numRuns: 300 },
    );
  });

  it("session replies come in orders other than request order", () => {
    const reordered = fc.sample(arb.session(), 500).some((steps) => {
      const replies = steps.flatMap((s) => (s.frame.type === "reply" ? [s.frame.id] : []));
      return replies.some((id, i) => i > 0 && id < replies[i - 1]!);
    });
    expect(reordered).toBe(true);
  });

  it("garbageLine makes non-blank single lines the codec rejects", () => {
    fc.assert(
      fc.property(arb.garbageLine(), (line) => {
        expect(line.includes("\n")).toBe(false);
        expect(line.trim()).not.toBe("");
        expect(() => decodeFrame(line)).toThrow();
      }),
      { numRuns: 500 },
    );
  });

  it("chunking always reassembles, and cuts inside UTF-8 sequences and CRLF pairs", () => {
    const bytes = Buffer.from('{"a":"é读🎉"}\r\n{"b":1}\r\n', "utf8");
    fc.assert(
      fc.property(arb.chunking(bytes), (chunks) => {
        expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
      }),
    );
    const cutsInside = fc
      .sample(arb.chunking(bytes), 300)
      .some((chunks) => chunks.slice(0, -1).some((c) => c.length > 0 && (c[c.length - 1]! >= 0xc0 || c[c.length - 1] === 13)));
    expect(cutsInside).toBe(true);
  });
});
