/**
 * docs/code.md's host loop is code users copy: it type-checks (strict, nodenext, against the built
 * package, with the project's tsc) and runs as written, its types stripped the way runCode strips a body's.
 */
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runStripped, typeErrors as typeErrorsIn } from "../../helpers/doc-examples.js";

const root = fileURLToPath(new URL("../../..", import.meta.url));
// Inside the repository, where the package name resolves to this package's build and zod is installed.
const scratch = join(root, ".code-docs-example");
const docs = readFileSync(join(root, "docs/code.md"), "utf8");
const example = /<!-- code-example: host-loop -->\n```ts\n([\s\S]*?)```/.exec(docs)?.[1];
const declarationsOutput = /<!-- code-example: declarations-output -->\n```ts\n([\s\S]*?)```/.exec(docs)?.[1];
const readmeExample = /<!-- code-example: readme -->\n```ts\n([\s\S]*?)```/.exec(readFileSync(join(root, "README.md"), "utf8"))?.[1];

const typeErrors = (name: string, code: string) => typeErrorsIn(scratch, name, code);
const runExample = (name: string, code: string) => runStripped(scratch, name, code);

describe("docs/code.md", () => {
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("has the host loop example", () => expect(example).toContain("runCode({"));

  it("the host loop type-checks in strict nodenext against the built package", () => {
    expect(typeErrors("host-loop.ts", example!)).toBe("");
  });

  it("the host loop runs and prints the body's answer", () => {
    expect(runExample("host-loop.mjs", example!)).toBe("6\n");
  });

  it("shows what declarations() really prints for the host loop's contract", async () => {
    const { z } = await import("zod");
    const { defineCapabilities } = await import("@posoco/ears");
    const tools = defineCapabilities({
      read: { description: "Read a UTF-8 file under the root", arguments: z.object({ path: z.string() }) },
      add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
    });
    expect(example).toContain(`read: { description: "Read a UTF-8 file under the root", arguments: z.object({ path: z.string() }) },`);
    expect(declarationsOutput).toBeDefined();
    // The block is an excerpt: each of its lines stands in the real output, in the same order.
    const output = tools.declarations().split("\n");
    let at = 0;
    for (const line of declarationsOutput!.trim().split("\n")) {
      const found = output.indexOf(line, at);
      expect(
        found,
        `docs/code.md's declarations excerpt: ${JSON.stringify(line)} is not in declarations() after line ${at}`,
      ).toBeGreaterThanOrEqual(0);
      at = found + 1;
    }
  });

  it("the README's runCode example type-checks and runs", () => {
    expect(readmeExample).toContain("runCode({");
    expect(typeErrors("readme.ts", readmeExample!)).toBe("");
    expect(runExample("readme.mjs", readmeExample!)).toBe("6 true\n");
  });

  it("a type error in an example is caught (the check can fail)", () => {
    expect(typeErrors("broken.ts", 'import { runCode } from "@posoco/ears/host";\nawait runCode({ code: 1 });\n')).toMatch(/error TS2322/);
  });
});
