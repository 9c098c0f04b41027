/**
 * Every code body the docs show, and the body the docs and the import error tell a model to write for
 * Node's built-ins (`process.getBuiltinModule("node:fs")`), type-checks with `typecheck: true` (issue 29,
 * item 3). Before the fix the second failed with TS2591 "Cannot find name 'process' … npm i --save-dev
 * @types/node", advice a model cannot follow. The bodies are found in the Markdown (`code: '…'`, a
 * model's `return '…'`, `const code = '…'`, `--code '…'`), so a body added to the docs is checked too;
 * the contract holds every capability they call.
 */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { NO_MODULES_HINT } from "../../../src/protocol/code-body.js";
import { defineCapabilities } from "../../../src/index.js";
import { FETCH_SPEC } from "../../../src/host/index.js";
import { checkDeclarations, typecheckBody } from "../../../src/host/code/typecheck.js";

/** Every capability a body in the docs calls, typed as the docs' hosts type them. */
const docsContract = defineCapabilities({
  add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
  read: { arguments: z.object({ path: z.string() }) },
  now: {},
  "everything.get-sum": { arguments: z.object({ a: z.number(), b: z.number() }) },
  fetch: FETCH_SPEC,
  send_email: { arguments: z.object({ to: z.string(), body: z.string() }) },
  pay: { arguments: z.object({ amount: z.number() }) },
});
// The docs' one body that reads input is run with input 21.
const declarations = checkDeclarations(docsContract, z.number(), undefined);

/** A JavaScript string literal as the docs write it, as its value. */
function literal(text: string): string {
  return new Function(`return ${text}`)() as string;
}

const STRING = String.raw`('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")`;
const IN_CODE = new RegExp(String.raw`(?:\bcode: |\breturn |\bconst code = )${STRING}`, "g");
const ON_COMMAND_LINE = /--code '([^']*)'/g;

function docBodies(): { where: string; body: string }[] {
  const files = ["README.md", ...readdirSync("docs").map((name) => `docs/${name}`)].filter((file) => file.endsWith(".md"));
  const found: { where: string; body: string }[] = [];
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(IN_CODE)) {
      const body = literal(match[1]!);
      if (/\bears\.call\(|\binput\b/.test(body)) found.push({ where: `${file}: ${match[0].slice(0, 40)}`, body });
    }
    for (const match of text.matchAll(ON_COMMAND_LINE)) {
      if (match[1] !== "<body>") found.push({ where: `${file}: --code`, body: match[1]! });
    }
  }
  return found;
}

describe.runIf(process.platform === "linux")("the docs' bodies under typecheck: true", () => {
  const bodies = docBodies();

  it("finds the docs' bodies", () => {
    expect(bodies.length).toBeGreaterThanOrEqual(8);
  });

  it("every body in the docs type-checks", async () => {
    for (const { where, body } of bodies) expect([where, await typecheckBody(body, declarations, undefined)]).toEqual([where, undefined]);
  }, 120_000);

  it("the body the import error advises (process.getBuiltinModule) type-checks, and so does what a body may use of Node", async () => {
    const advised = /process\.getBuiltinModule\("node:fs"\)/.exec(NO_MODULES_HINT)![0];
    const body = [
      `const fs = ${advised};`,
      'const path = process.getBuiltinModule("node:path");',
      'const entries: string[] = fs.readdirSync(path.join(process.cwd(), "."));',
      'console.log(process.env.HOME, process.platform, process.version, Buffer.from("x").length);',
      "await new Promise((resolve) => setTimeout(resolve, 1));",
      "setImmediate(() => {});",
      "const controller = new AbortController();",
      'const url = new URL("https://example.com/a?b=1");',
      "return { count: entries.length, aborted: controller.signal.aborted, host: url.host, now: performance.now() > 0 };",
    ].join("\n");
    expect(await typecheckBody(body, checkDeclarations(undefined, undefined, undefined), undefined)).toBeUndefined();
  }, 60_000);

  it("what a body cannot use is still refused: require and an unknown global", async () => {
    const problem = await typecheckBody(
      'const fs = require("node:fs");\nreturn nothingHere;',
      checkDeclarations(undefined, undefined, undefined),
      undefined,
    );
    expect(problem).toMatch(/code\.ts:1:12: Cannot find name 'require'/);
    expect(problem).toMatch(/code\.ts:2:8: Cannot find name 'nothingHere'/);
  }, 60_000);
});
