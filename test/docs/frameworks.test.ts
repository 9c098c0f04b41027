/**
 * docs/frameworks.md's two agents are code users paste: each type-checks (strict, nodenext, against the
 * built package) and runs as written, with a scripted model as the `./model.js` the example imports.
 */
import { createRequire } from "node:module";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runStripped, typeErrors } from "../helpers/doc-examples.js";
import { AGENTS_MODEL, AI_MODEL, EXPECTED_ANSWER } from "../helpers/framework-models.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
// Inside the repository, where the package name resolves to this package's build and the frameworks are installed.
const scratch = join(root, ".framework-examples");
const docs = readFileSync(join(root, "docs/frameworks.md"), "utf8");
const example = (name: string) => new RegExp(`<!-- code-example: ${name} -->\\n\`\`\`ts\\n([\\s\\S]*?)\`\`\``).exec(docs)?.[1] ?? "";
const amaro = createRequire(import.meta.url)("amaro") as { transformSync(code: string, options: { mode: string }): { code: string } };

describe("docs/frameworks.md", () => {
  beforeAll(() => {
    // The Agents SDK exports traces to OpenAI's API by default; a test sends nothing off this machine.
    process.env.OPENAI_AGENTS_DISABLE_TRACING = "1";
    mkdirSync(scratch, { recursive: true });
    for (const [name, source] of [
      ["model", AI_MODEL],
      ["agents-model", AGENTS_MODEL],
    ] as const) {
      writeFileSync(join(scratch, `${name}.ts`), source);
      writeFileSync(join(scratch, `${name}.js`), amaro.transformSync(source, { mode: "strip-only" }).code);
    }
  });
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  for (const [name, entry] of [
    ["ai-agent", "@posoco/ears/ai"],
    ["agents-agent", "@posoco/ears/openai-agents"],
  ] as const) {
    it(`${name}: is under 30 lines, type-checks in strict nodenext and runs, printing what the body returned`, { timeout: 120_000 }, () => {
      const code = example(name);
      expect(code).toContain(`from "${entry}"`);
      expect(code.trim().split("\n").length).toBeLessThan(30);
      expect(typeErrors(scratch, `${name}.mts`, code)).toBe("");
      const printed = runStripped(scratch, `${name}.mjs`, code);
      expect(printed).toContain(EXPECTED_ANSWER);
      // The code tool's output, as the scripted model repeats it (the Agents SDK sends it to the model as JSON text).
      expect(printed).toMatch(/\\?"status\\?":\\?"success/);
    });
  }

  it("the description excerpt is what the AI SDK example's code tool says", async () => {
    const { tool } = await import("ai");
    const { z } = await import("zod");
    const { createCodeTool } = await import("../../src/frameworks/ai.js");
    const getWeather = tool({
      description: "The weather in a city",
      inputSchema: z.object({ city: z.string() }),
      outputSchema: z.object({ city: z.string(), celsius: z.number() }),
      execute: async ({ city }) => ({ city, celsius: 10 + city.length }),
    });
    const getTime = tool({
      description: "The local time in an IANA time zone, as HH:MM",
      inputSchema: z.object({ zone: z.string() }),
      execute: async () => "12:00",
    });
    const description = (createCodeTool({ tools: { getWeather, getTime }, pool: false }) as { description: string }).description;
    const excerpt = /## What the model sees[\s\S]*?```text\n([\s\S]*?)```/.exec(docs)![1]!;
    const [first, second, , ...declarations] = excerpt.trim().split("\n");
    // The first two lines, up to the "[…]" where the excerpt skips, are the description's start.
    expect(description.startsWith(`${first} ${second}`.replace(/ \[…\]$/, ""))).toBe(true);
    for (const line of declarations) expect(description, line).toContain(line);
  });
});
