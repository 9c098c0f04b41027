/**
 * The built-in read holds one copy of a file per answer (issue 23): while it reads, one buffer; once it
 * has answered, only the answer's string. Answers that wait for a guest that does not read are held as
 * they are (test/host/running-handlers.test.ts), so each one costs its string and nothing more.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, describe, expect, it } from "vitest";
import { rootFiles } from "../../src/cli/root-files.js";
import type { Outcome } from "../../src/protocol/outcome.js";

const MiB = 1024 * 1024;
const dir = mkdtempSync(join(tmpdir(), "ears-read-memory-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A full collection after a turn of the event loop (the last read's settled promises let go), so what is measured is what is held. */
async function collect(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  setFlagsFromString("--expose-gc");
  (runInNewContext("gc") as () => void)();
}

describe("the built-in read's memory per answer", () => {
  it("keeps one string per answer of a 16 MiB file, and no buffer", async () => {
    writeFileSync(join(dir, "big.txt"), "0123456789abcdef\n".repeat(MiB).slice(0, 16 * MiB));
    const files = await rootFiles(dir);
    const answers: Outcome[] = [];
    await collect();
    const before = process.memoryUsage();
    for (let i = 0; i < 4; i++) {
      const answer = (await files.read!({ path: "big.txt" }, { name: "read", id: i + 1, signal: new AbortController().signal })) as Outcome;
      expect(answer.status === "success" && answer.content.length).toBe(16 * MiB);
      answers.push(answer);
    }
    // ASCII text: a one-byte string of 16 MiB each, and the file's buffers all released. Node 24's V8 keeps a
    // string this large outside the heap (counted in `external`, not in `arrayBuffers`); Node 20 and 22 in it.
    const strings = (m: NodeJS.MemoryUsage) => m.heapUsed + m.external - m.arrayBuffers;
    // Memory goes back after the collection that frees it, sometimes a collection later: a buffer's, and on a
    // loaded machine (V8 sweeps on background threads) a garbage string's too. Collect until both settle; what
    // is still held never does.
    let after = process.memoryUsage();
    for (let i = 0; i < 5; i++) {
      await collect();
      after = process.memoryUsage();
      if (after.arrayBuffers - before.arrayBuffers < MiB && strings(after) - strings(before) < 4 * 16 * MiB + 8 * MiB) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(strings(after) - strings(before)).toBeGreaterThanOrEqual(4 * 16 * MiB);
    expect(strings(after) - strings(before)).toBeLessThan(4 * 16 * MiB + 8 * MiB);
    expect(after.arrayBuffers - before.arrayBuffers).toBeLessThan(MiB);
    expect(answers).toHaveLength(4);
  });
});
