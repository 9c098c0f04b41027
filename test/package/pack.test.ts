// `npm pack` must give a package that installs and works in an empty folder: every entry imports, the
// guest runs under the packaged CLI, the guest entry stays free of heavy modules, and the documentation's
// examples type-check against it with the project's TypeScript and with a TypeScript 5.x release.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { documentationBlocks, documentationCompanions, sampleNames, typeCheckBlocks } from "../helpers/doc-blocks.js";

const root = resolve(import.meta.dirname, "../..");
let folder: string;

function run(command: string, args: string[], cwd: string): string {
  return execFileSync(command, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

describe("npm pack", () => {
  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), "ears-pack-"));
    run("npm", ["pack", "--ignore-scripts", "--pack-destination", folder], root);
    const tarball = readdirSync(folder).find((name) => name.endsWith(".tgz"));
    if (tarball === undefined) throw new Error("npm pack produced no tarball");
    writeFileSync(join(folder, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", `./${tarball}`], folder);
  }, 180_000);

  afterAll(() => {
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  it("installs without the optional peers: no fast-check, no zod", () => {
    expect(readdirSync(join(folder, "node_modules")).sort()).toEqual([".bin", ".package-lock.json", "@posoco"]);
    expect(readFileSync(join(folder, "node_modules/@posoco/ears/LICENSE"), "utf8")).toContain(
      "Apache License\n                           Version 2.0",
    );
  });

  it("without its optional peer, /testing and /schemas say what to install; the other entries import", () => {
    const script = (entry: string) => `
      try { await import(${JSON.stringify(entry)}); console.log("imported"); } catch (error) { console.log(error.message); }`;
    const output = (entry: string) => run(process.execPath, ["--input-type=module", "-e", script(entry)], folder).trim();
    expect(output("@posoco/ears/testing")).toBe(
      "@posoco/ears/testing needs fast-check, an optional peer dependency that is not installed: npm install --save-dev fast-check",
    );
    expect(output("@posoco/ears/schemas")).toBe(
      "@posoco/ears/schemas needs zod, an optional peer dependency that is not installed: npm install zod",
    );
    for (const entry of ["@posoco/ears", "@posoco/ears/host", "@posoco/ears/openseek"]) expect(output(entry), entry).toBe("imported");
    const runCode =
      `import { runCode } from "@posoco/ears/host"; ` +
      `try { runCode({ code: "return 1;" }); } catch (error) { console.log(error.message); }`;
    expect(run(process.execPath, ["--input-type=module", "-e", runCode], folder).trim()).toBe(
      "runCode needs amaro, an optional peer dependency that is not installed: npm install amaro",
    );
    const mcp =
      `import { connectMcpServers } from "@posoco/ears/host"; ` +
      `try { await connectMcpServers({ mcpServers: {} }); } catch (error) { console.log(error.message); }`;
    expect(run(process.execPath, ["--input-type=module", "-e", mcp], folder).trim()).toBe(
      "MCP connectors and ears mcp need @modelcontextprotocol/sdk, an optional peer dependency that is not installed: " +
        "npm install @modelcontextprotocol/sdk",
    );
    // Recording a production run is the host's, not the test kit's: it works with no fast-check installed.
    writeFileSync(
      join(folder, "guest.mjs"),
      'import { serve, stdio } from "@posoco/ears";\nawait serve({ wire: stdio(), run: async () => "done" });\n',
    );
    const record =
      `import { readTranscript, recordTo, runGuest } from "@posoco/ears/host"; ` +
      `const recorder = recordTo("run.ndjson", { timed: true }); ` +
      `const report = await runGuest({ command: process.execPath, args: ["guest.mjs"], sandbox: false, record: recorder }); ` +
      `await recorder.close(); ` +
      `const entries = await readTranscript("run.ndjson"); ` +
      `console.log(report.ok, entries.map((entry) => entry.frame?.type ?? Object.keys(entry).at(-1)).join(","));`;
    expect(run(process.execPath, ["--input-type=module", "-e", record], folder).trim()).toBe("true hello,invoke,result,report");
    // tsc runs in the host at run time: a dependency, not a dev dependency (issue 22, item 11).
    const typecheck =
      `import { runCode } from "@posoco/ears/host"; ` +
      `try { runCode({ code: "return 1;", typecheck: true }); } catch (error) { console.log(error.message); }`;
    expect(run(process.execPath, ["--input-type=module", "-e", typecheck], folder).trim()).toBe(
      "runCode({ typecheck: true }) needs typescript, an optional peer dependency that is not installed: npm install typescript " +
        "(the host runs tsc when it runs code, so it is not only a development tool)",
    );
  });

  it("with the peers installed, every entry point imports", () => {
    run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "fast-check@4", "zod@4"], folder);
    const script = `
      const entries = ["@posoco/ears", "@posoco/ears/host", "@posoco/ears/testing", "@posoco/ears/openseek", "@posoco/ears/schemas"];
      for (const entry of entries) {
        const module = await import(entry);
        if (Object.keys(module).length === 0) throw new Error(entry + " exports nothing");
      }
      console.log("ok");`;
    expect(run(process.execPath, ["--input-type=module", "-e", script], folder).trim()).toBe("ok");
  });

  it("runs a TypeScript code body with runCode from the installed package (its runner is in dist/)", () => {
    run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "amaro@1.2.1"], folder);
    const script = `
      import { runCode } from "@posoco/ears/host";
      const report = await runCode({ code: "const n: number = input.n as number;\\nreturn n * 2;", input: { n: 21 } });
      console.log(JSON.stringify(report.outcome ?? report.failure));`;
    expect(JSON.parse(run(process.execPath, ["--input-type=module", "-e", script], folder))).toEqual({
      status: "success",
      content: "",
      structured: 42,
    });
  });

  const typeChecksInStrictNodenext =
    "type-checks the contract sample, every documentation example (marked fragments aside) and the package's declarations " +
    "in strict nodenext, with TypeScript 7 and 5.9";
  // Two compilers over every documentation example: minutes on one loaded CPU (a bound for a hang, not a measure).
  it(typeChecksInStrictNodenext, { timeout: 480_000 }, () => {
    // TypeScript 5.9.3 is installed here rather than as a dev dependency alias: the alias's bin `tsc`
    // collides with TypeScript 7's in the project's node_modules/.bin.
    run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--save-dev", "typescript@5.9.3"], folder);
    // Ambient types a consumer's project has anyway; they are not what is checked, so they come from here.
    mkdirSync(join(folder, "node_modules/@types"), { recursive: true });
    symlinkSync(join(root, "node_modules/@types/node"), join(folder, "node_modules/@types/node"), "dir");
    symlinkSync(join(root, "node_modules/vitest"), join(folder, "node_modules/vitest"), "dir");
    // docs/observability.md's examples import OpenTelemetry, which a tracing host installs itself; docs/frameworks.md's
    // import the AI SDK and the Agents SDK, which a user of those adapters has.
    for (const name of ["@opentelemetry", "ai", "@openai"])
      symlinkSync(join(root, "node_modules", name), join(folder, "node_modules", name), "dir");
    // The same blocks as test/docs/examples.test.ts (every one but marked fragments), the files they import
    // that are the reader's own (./model.js), and the contract sample.
    const blocks = documentationBlocks(root).filter((block) => !block.checkedElsewhere);
    const sample = Object.fromEntries([
      ...sampleNames.map((name) => [`sample/${name}.ts`, readFileSync(join(root, "test-d/sample", `${name}.ts`), "utf8")]),
      ...Object.entries(documentationCompanions),
    ]);
    const entries = ["", "/host", "/testing", "/openseek", "/schemas"]
      .map((entry, index) => `export type * as entry${index} from "@posoco/ears${entry}";\n`)
      .join("");
    const compilers = {
      [run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-v"], folder).trim()]: join(
        root,
        "node_modules/typescript/bin/tsc",
      ),
      [run(process.execPath, [join(folder, "node_modules/typescript/bin/tsc"), "-v"], folder).trim()]: join(
        folder,
        "node_modules/typescript/bin/tsc",
      ),
    };
    expect(
      Object.keys(compilers)
        .map((version) => version.replace(/^Version (\d+)\..*$/, "$1"))
        .sort(),
    ).toEqual(["5", "7"]);
    for (const [version, tsc] of Object.entries(compilers)) {
      // In the consumer, so "@posoco/ears" resolves to the installed tarball, not to this repository.
      expect(typeCheckBlocks(join(folder, "check"), tsc, blocks, sample), version).toEqual([]);
      // The published declarations (emitted by TypeScript 7) must hold under 5.9 as well: every entry's,
      // checked with skipLibCheck off (apart from vitest's, which the examples above need and which are slow).
      expect(typeCheckBlocks(join(folder, "check"), tsc, [], { "entries.ts": entries }, { skipLibCheck: false }), version).toEqual([]);
    }
  });

  it("type-checks code bodies with the consumer's TypeScript 5.9 from the installed package (its warm checker is in dist/)", () => {
    // After typescript@5.9.3 was installed in the consumer above.
    const script = `
      import { runCode } from "@posoco/ears/host";
      const bad = await runCode({ code: "const s: string = 1;", typecheck: true, sandbox: false });
      const good = await runCode({ code: "const n: number = 2;\\nreturn n;", typecheck: true, sandbox: false });
      console.log(JSON.stringify([bad.failure, good.outcome]));`;
    expect(JSON.parse(run(process.execPath, ["--input-type=module", "-e", script], folder))).toEqual([
      {
        code: "CompileError",
        message: "the code was not run: type errors: code.ts:1:7: Type 'number' is not assignable to type 'string'. (TS2322)",
      },
      { status: "success", content: "", structured: 2 },
    ]);
  });

  it("runs a guest under the packaged ears CLI", () => {
    writeFileSync(
      join(folder, "guest.mjs"),
      `import { serve, stdio } from "@posoco/ears";
       await serve({ wire: stdio(), run: async (ears, input) => ({ got: input, allowed: ears.allowed }) });`,
    );
    const out = run(
      join(folder, "node_modules/.bin/ears"),
      ["run", "--json", "--input", '{"n":1}', "--", process.execPath, "guest.mjs"],
      folder,
    );
    const report = JSON.parse(out);
    expect(report.outcome).toEqual({ status: "success", content: "", structured: { got: { n: 1 }, allowed: [] } });
  });

  it("walks the README's user path in the consumer: its guest under the packaged CLI, its host, code mode and test kit", () => {
    // After the peers the README's install section names (zod, fast-check, amaro) were installed above.
    const readme = readFileSync(join(root, "README.md"), "utf8");
    // The README links the changelog; the package ships it.
    expect(readFileSync(join(folder, "node_modules/@posoco/ears/CHANGELOG.md"), "utf8")).toMatch(/^## 0\.1\.0\b/m);
    const user = join(folder, "user");
    mkdirSync(user, { recursive: true });
    writeFileSync(join(user, "guest.mjs"), /```js\n(\/\/ guest\.mjs\n[\s\S]*?)```/.exec(readme)?.[1] ?? "");
    writeFileSync(join(user, "README.md"), readme);
    const command = /^npx ears (run [^\n]*-- node guest\.mjs)$/m.exec(readme)?.[1] ?? "";
    const words = [...command.matchAll(/'([^']*)'|(\S+)/g)].map((match) => match[1] ?? match[2]!);
    expect(words[0]).toBe("run");
    expect(run(join(folder, "node_modules/.bin/ears"), words, user)).toContain('"echo"');
    // The quickstart's MCP example needs the MCP SDK and server-everything, which its user installs: here from this repository.
    const mcp = join(folder, "node_modules/@modelcontextprotocol");
    if (!existsSync(mcp)) symlinkSync(join(root, "node_modules/@modelcontextprotocol"), mcp, "dir");
    // With its bin link, as `npm install` makes it: npx runs the installed server, never one from its cache.
    const serverBin = join(folder, "node_modules/.bin/mcp-server-everything");
    if (!existsSync(serverBin)) symlinkSync(join(root, "node_modules/.bin/mcp-server-everything"), serverBin);
    const runnable = [...readme.matchAll(/<!-- run -->\n```js\n([\s\S]*?)```/g)].map((match) => match[1]!);
    expect(runnable.length).toBeGreaterThanOrEqual(2);
    runnable.forEach((code, index) => {
      writeFileSync(join(user, `example-${index}.mjs`), code);
      expect(run(process.execPath, [`example-${index}.mjs`], user).length, `README example ${index + 1}`).toBeGreaterThan(0);
    });
    // The code-mode example is TypeScript: stripped with the consumer's amaro, as a user on Node 20 would run it with tsx.
    const codeMode = /<!-- code-example: readme -->\n```ts\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
    writeFileSync(join(user, "code-mode.ts"), codeMode);
    const strip = `const { transformSync } = require("amaro"); const fs = require("node:fs");
      fs.writeFileSync("code-mode.mjs", transformSync(fs.readFileSync("code-mode.ts", "utf8"), { mode: "strip-only" }).code);`;
    run(process.execPath, ["-e", strip], user);
    expect(run(process.execPath, ["code-mode.mjs"], user)).toBe("6 true\n");
  });

  it("keeps the guest entry's import graph to its own files and node builtins", () => {
    const dist = join(folder, "node_modules/@posoco/ears/dist");
    const seen = new Set<string>();
    const bare = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, "utf8");
      for (const match of text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
        const specifier = match[1]!;
        if (specifier.startsWith(".")) visit(resolve(dirname(file), specifier));
        else bare.add(specifier);
      }
    };
    visit(join(dist, "index.js"));
    expect([...bare].filter((name) => !name.startsWith("node:"))).toEqual([]);
    // The bundle step puts the whole guest runtime in one chunk: a guest loads exactly two files.
    const files = [...seen].map((file) => file.slice(dist.length + 1)).sort();
    expect(files).toHaveLength(2);
    expect(files[0]).toMatch(/^chunks\/core-[\w-]+\.js$/);
    expect(files[1]).toBe("index.js");
  });
});
