// docs/frameworks.md's two agents in a consumer made with `npm pack` (issue 30): an empty strict `nodenext`
// project installs the packed tarball, `ai` (6, what npm on Node 20 picks for the peer range `^6 || ^7`) and
// `@openai/agents`, type-checks both examples as the docs print them, and runs them, the framework's model
// double (test/helpers/framework-models.ts) standing in for the user's `./model.js` only. One tarball and
// one install for the file, in a private npm cache (so it does not contend with other installs).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENTS_MODEL, AI_MODEL, EXPECTED_ANSWER } from "../helpers/framework-models.js";

const root = resolve(import.meta.dirname, "../..");
const docs = readFileSync(join(root, "docs/frameworks.md"), "utf8");
const example = (name: string) => new RegExp(`<!-- code-example: ${name} -->\\n\`\`\`ts\\n([\\s\\S]*?)\`\`\``).exec(docs)?.[1] ?? "";
let folder: string;

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync(command, args, { cwd, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

describe("npm pack: the framework entries in a consumer", () => {
  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), "ears-frameworks-pack-"));
    run("npm", ["pack", "--ignore-scripts", "--pack-destination", folder], root);
    const tarball = readdirSync(folder).find((name) => name.endsWith(".tgz"));
    if (tarball === undefined) throw new Error("npm pack produced no tarball");
    writeFileSync(join(folder, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    // The docs' install line: the package, amaro and typescript (typecheck: true), the framework, zod for the tools.
    const packages = [`./${tarball}`, "amaro@1.2.1", "typescript@5.9.3", "zod@4", "ai@^6", "@openai/agents@^0.20.0"];
    const cache = join(folder, ".npm-cache");
    run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--cache", cache, ...packages], folder);
    // Ambient Node types a consumer's project has anyway (the frameworks' dependencies may bring them); not what is checked.
    if (!existsSync(join(folder, "node_modules/@types/node"))) {
      mkdirSync(join(folder, "node_modules/@types"), { recursive: true });
      symlinkSync(join(root, "node_modules/@types/node"), join(folder, "node_modules/@types/node"), "dir");
    }
  }, 600_000);

  afterAll(() => {
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it("installs the AI SDK 6 and the Agents SDK beside the package", () => {
    const version = (name: string) =>
      JSON.parse(readFileSync(join(folder, "node_modules", name, "package.json"), "utf8")).version as string;
    expect(version("ai")).toMatch(/^6\./);
    expect(version("@openai/agents")).toMatch(/^0\.20\./);
    expect(version("@posoco/ears")).toBe(JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version);
  });

  it(
    "type-checks both examples unchanged in strict nodenext, and runs them with the model double as ./model.js",
    { timeout: 300_000 },
    () => {
      const project = join(folder, "agents");
      mkdirSync(project, { recursive: true });
      const files = {
        "ai-agent.ts": example("ai-agent"),
        "agents-agent.ts": example("agents-agent"),
        "model.ts": AI_MODEL,
        "agents-model.ts": AGENTS_MODEL,
      };
      expect(files["ai-agent.ts"]).toContain('from "@posoco/ears/ai"');
      expect(files["agents-agent.ts"]).toContain('from "@posoco/ears/openai-agents"');
      for (const [name, text] of Object.entries(files)) writeFileSync(join(project, name), text);
      const compilerOptions = { strict: true, module: "nodenext", target: "es2022", types: ["node"], outDir: "out", skipLibCheck: true };
      writeFileSync(join(project, "tsconfig.json"), JSON.stringify({ compilerOptions, files: Object.keys(files) }));
      // The consumer's own TypeScript (5.9, installed above), against the installed package's declarations.
      const tsc = join(folder, "node_modules/typescript/bin/tsc");
      let errors = "";
      try {
        run(process.execPath, [tsc, "-p", "tsconfig.json"], project);
      } catch (error) {
        errors = String((error as { stdout?: string }).stdout);
      }
      expect(errors).toBe("");
      // The Agents SDK exports traces to OpenAI's API by default; a test sends nothing off this machine.
      const env = { ...process.env, OPENAI_AGENTS_DISABLE_TRACING: "1" };
      for (const name of ["ai-agent", "agents-agent"]) {
        const printed = run(process.execPath, [join("out", `${name}.js`)], project, env);
        expect(printed, name).toContain(EXPECTED_ANSWER);
        expect(printed, name).toMatch(/\\?"status\\?":\\?"success/);
      }
    },
  );
});
