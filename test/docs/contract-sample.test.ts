// The contract sample (test-d/sample/*.ts, type-checked by `tsc -p test-d` in `npm test`) also
// runs: compiled with the project's TypeScript, the host spawns the guest as a real child process.
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const out = join(root, ".contract-sample");
const tsc = join(root, "node_modules/typescript/bin/tsc");

describe("the typed-contract sample", () => {
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it("compiles in strict nodenext and runs: guest and host agree through the contract", () => {
    const sample = ["contract", "guest", "host"].map((name) => join(root, "test-d/sample", `${name}.ts`));
    execFileSync(
      process.execPath,
      [
        tsc,
        "--ignoreConfig",
        "--strict",
        "--module",
        "nodenext",
        "--target",
        "es2022",
        "--types",
        "node",
        "--rootDir",
        join(root, "test-d/sample"),
        "--outDir",
        out,
        ...sample,
      ],
      {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const printed = execFileSync(process.execPath, ["host.js"], { cwd: out, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).split(
      "\n",
    );
    // console.log of the structured result, then the JSON of describe().
    expect(printed[0]).toBe(`{ length: ${"contents of README.md".length}, sum: 3 }`);
    const described = JSON.parse(printed[1]!);
    expect(described.map((entry: { name: string }) => entry.name)).toEqual(["read", "add"]);
    expect(described[1].outputSchema.properties).toEqual({ sum: { type: "number" } });
  });

  it("is exactly the block docs/contracts.md shows, so the documented code is the checked code", () => {
    const docs = readFileSync(join(root, "docs/contracts.md"), "utf8");
    const block = /```ts\n([\s\S]*?)```/.exec(docs)?.[1];
    const files = ["contract", "guest", "host"].map((name) => readFileSync(join(root, "test-d/sample", `${name}.ts`), "utf8"));
    expect(block).toBe(files.join("\n"));
  });
});
