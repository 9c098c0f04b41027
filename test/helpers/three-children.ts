/**
 * A body that starts three children and returns only when the test says so: for the process-count tests, which
 * must see the host's watch count the whole tree before the body may end (a runner that returns exits at once,
 * and its children with it, sandboxed), rather than hope a 100 ms sample lands in between.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCode } from "../../src/host/index.js";
import type { RunReport } from "../../src/host/api/types.js";
import { uniqueMarker } from "./processes.js";

/** A body that starts three `sleep 30 <marker>` children and returns 3 once the file `go` exists (at most 120 s). */
export function threeChildrenAwaitingBody(marker: string, go: string): string {
  return `
    const { spawn } = process.getBuiltinModule("node:child_process");
    const { existsSync } = process.getBuiltinModule("node:fs");
    const children = [1, 2, 3].map(() => spawn("sleep", ["30", ${JSON.stringify(marker)}], { stdio: "ignore" }));
    const started = (child) => new Promise((resolve, reject) => { child.on("spawn", resolve); child.on("error", reject); });
    await Promise.all(children.map(started));
    const end = Date.now() + 120000;
    while (!existsSync(${JSON.stringify(go)}) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    return children.length;`;
}

/**
 * Runs that body with runCode and lets it return once `seen` settles (the test's wrapped sampler saw the whole
 * tree): the report, and the children's marker.
 */
export async function runThreeChildren(sandbox: boolean, seen: Promise<void>): Promise<{ report: RunReport; marker: string }> {
  const marker = uniqueMarker();
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "ears-three-children-")));
  const go = join(dir, "go");
  try {
    const code = threeChildrenAwaitingBody(marker, go);
    const running = runCode({ code, sandbox: sandbox ? { readable: [dir] } : false, limits: { runTimeoutMs: 180_000 } });
    await Promise.race([seen, running]);
    writeFileSync(go, "");
    return { report: await running, marker };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
