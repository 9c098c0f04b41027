// The README's examples are code users copy: the runnable ones run as written, in a folder holding only
// the README's guest.mjs and a README.md, where the package name resolves to this package's build; the
// OpenSeek ones are the very blocks that test/openseek/docs.test.ts runs from docs/openseek.md.
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const readme = readFileSync(join(root, "README.md"), "utf8");
const scratch = join(root, ".readme-examples");

function blocks(text: string, marker: RegExp): { name: string; code: string }[] {
  const found: { name: string; code: string }[] = [];
  const pattern = new RegExp(`${marker.source}\\n\`\`\`js\\n([\\s\\S]*?)\`\`\``, "g");
  for (const match of text.matchAll(pattern)) found.push({ name: match[1] ?? `run-${found.length + 1}`, code: match[2] ?? match[1]! });
  return found;
}

describe("README examples", () => {
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  const runnable = [...readme.matchAll(/<!-- run -->\n```js\n([\s\S]*?)```/g)].map((match) => match[1]!);
  it("has runnable examples", () => expect(runnable.length).toBeGreaterThanOrEqual(2));

  // The README's own guest, the file the host example runs: the examples need nothing the package lacks.
  const guest = /```js\n(\/\/ guest\.mjs\n[\s\S]*?)```/.exec(readme)?.[1];
  it("has the guest the host example runs", () => expect(guest).toBeDefined());

  runnable.forEach((code, index) => {
    it(`runnable example ${index + 1} runs and exits 0 in a folder with only the README's guest.mjs and a README.md`, () => {
      // Inside the repository, so "@posoco/ears" resolves to this package's build through its own "exports".
      rmSync(scratch, { recursive: true, force: true });
      mkdirSync(scratch, { recursive: true });
      writeFileSync(join(scratch, "guest.mjs"), guest ?? "");
      writeFileSync(join(scratch, "README.md"), readme);
      const file = join(scratch, `example-${index + 1}.mjs`);
      writeFileSync(file, code);
      const out = execFileSync(process.execPath, [file], { cwd: scratch, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
      expect(out.length).toBeGreaterThan(0);
    });
  });

  it("shows the OpenSeek examples exactly as docs/openseek.md, where they are run", () => {
    const docs = readFileSync(join(root, "docs/openseek.md"), "utf8");
    const named = blocks(readme, /<!-- example: ([\w-]+) -->/);
    expect(named.map((b) => b.name)).toEqual(["ptc-call", "mcp-search-call"]);
    const inDocs = new Map(blocks(docs, /<!-- example: ([\w-]+) -->/).map((b) => [b.name, b.code]));
    for (const { name, code } of named) expect(code, name).toBe(inDocs.get(name));
  });
});

/** The text of the README's `## title` section, up to the next one. */
function section(title: string): string {
  const start = readme.indexOf(`\n## ${title}\n`);
  if (start < 0) return "";
  const end = readme.indexOf("\n## ", start + 1);
  return readme.slice(start + 1, end < 0 ? undefined : end + 1);
}

// A user's path through the README (issue 22, item 13): install, a guest, a host, code mode, the test kit,
// each step as written; the repository's two commands stay first, for CI and newcomers.
describe("README user path", () => {
  const headings = [...readme.matchAll(/^## (.*)$/gm)].map((match) => match[1]!);

  it("opens with the code-mode quickstart, keeps the two commands right after it, then a user's path in order", () => {
    // Issue 29 item 14: code mode is what most users come for; the repository's two commands stay near the top.
    expect(headings.slice(0, 3)).toEqual(["Quickstart: code mode", "The two commands", "Install"]);
    expect(readme.indexOf("code mode")).toBeLessThan(readme.indexOf("guest runtime"));
    expect(section("The two commands")).toContain("npm ci && npm run demo");
    expect(section("The two commands")).toContain("npm ci && npm test");
    const path = ["Install", "A guest", "Run a guest from your own host", "Run the code a model writes", "Test a guest"];
    expect(headings.filter((heading) => path.includes(heading))).toEqual(path);
  });

  it("the quickstart goes tools → declarations → runCode with a pool → an MCP server → ears mcp in a client, each block run", () => {
    const quickstart = section("Quickstart: code mode");
    const steps = ["defineCapabilities(", ".declarations()", "createRunPool(", "connectMcpServers(", '"ears", "mcp"', "docs/frameworks.md"];
    const at = steps.map((step) => quickstart.indexOf(step));
    expect(
      at.every((index) => index >= 0),
      JSON.stringify(steps.filter((_, i) => at[i]! < 0)),
    ).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    // Its two code blocks are among the runnable examples above (run as written, exit 0).
    expect([...quickstart.matchAll(/<!-- run -->\n```js\n/g)]).toHaveLength(2);
  });

  it("the quickstart's run prints what the model sees for a success and for a body that throws (no report.failure read)", () => {
    // Issue 44 item 1: the first sample read report.failure.code, which a body that throws does not set.
    const code = /<!-- run -->\n```js\n(\/\/ quickstart\.mjs\n[\s\S]*?)```/.exec(readme)?.[1];
    expect(code).toContain("modelResult(report)");
    expect(code).not.toMatch(/report\.failure\.(code|message)/);
    rmSync(scratch, { recursive: true, force: true });
    mkdirSync(scratch, { recursive: true });
    writeFileSync(join(scratch, "quickstart.mjs"), code!);
    const out = execFileSync(process.execPath, [join(scratch, "quickstart.mjs")], { cwd: scratch, encoding: "utf8" });
    expect(out).toMatch(/^success 3 \d+\n/);
    expect(out).toMatch(/\nfailure GuestFailed: no \(at code\.ts:1:7\)\n/);
  });

  it("the quickstart's MCP client config starts this package from any directory, never an unscoped `ears`", () => {
    const block = /<!-- mcp-client-config -->\n```json\n([\s\S]*?)```/.exec(section("Quickstart: code mode"))?.[1];
    const server = (JSON.parse(block ?? "{}") as { mcpServers?: Record<string, { command: string; args: string[] }> }).mcpServers?.ears;
    expect(server?.command).toBe("npx");
    const args = server!.args;
    expect(args.slice(0, 2)).toEqual(["-y", "--package=@posoco/ears"]);
    const command = args.findIndex((arg) => !arg.startsWith("-"));
    expect(args.slice(command, command + 2)).toEqual(["ears", "mcp"]);
    // Every option before the command names a package for npx; every one after is one ears mcp --help lists.
    expect(args.slice(0, command).every((arg) => arg === "-y" || arg.startsWith("--package="))).toBe(true);
    const help = execFileSync(process.execPath, [join(root, "dist/cli/main.js"), "mcp", "--help"], { encoding: "utf8" });
    for (const option of args.slice(command + 2).filter((arg) => arg.startsWith("--"))) expect(help).toContain(option);
  });

  it("says how long npm test takes, and leaves contributors' material to CONTRIBUTING.md and changes to CHANGELOG.md", () => {
    expect(section("The two commands")).toMatch(/`npm test` takes about \d+ minutes on\s+a 2-core machine/);
    for (const moved of ["Mutation testing", "Layout"]) {
      expect(headings).not.toContain(moved);
      expect(readFileSync(join(root, "CONTRIBUTING.md"), "utf8")).toContain(`\n## ${moved}\n`);
    }
    expect(readme).toContain("[CONTRIBUTING.md](CONTRIBUTING.md)");
    expect(readFileSync(join(root, "CHANGELOG.md"), "utf8")).toMatch(/^## 0\.1\.0\b/m);
  });

  it("installs the package for a consumer, and every package the user path imports", () => {
    const install = section("Install");
    expect(install).toContain("npm install @posoco/ears zod");
    const installed = new Set(
      [...install.matchAll(/^npm install (?:--save-dev )?([^#\n]+)/gm)].flatMap((match) => match[1]!.trim().split(/\s+/)),
    );
    const userPath = ["Quickstart: code mode", "A guest", "Run a guest from your own host", "Run the code a model writes", "Test a guest"]
      .map(section)
      .join("\n");
    const imported = new Set(
      [...userPath.matchAll(/from "([^"]+)"/g)]
        .map((match) => match[1]!)
        .filter((specifier) => !specifier.startsWith("node:") && !specifier.startsWith("."))
        .map((specifier) => (specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!)),
    );
    expect([...imported].sort()).toEqual(["@posoco/ears", "fast-check", "zod"]);
    for (const name of imported) expect(installed, `the install section does not install ${name}`).toContain(name);
    // What runCode needs at run time, named where runCode says to install it.
    expect(installed).toContain("amaro");
    expect(installed).toContain("typescript");
  });

  it("names the package's engines as its requirement, and no peer it installs asks for a newer Node (no EBADENGINE)", () => {
    const minimumOf = (file: string) => {
      const engines = (JSON.parse(readFileSync(join(root, file), "utf8")) as { engines?: { node?: string } }).engines?.node ?? "";
      return (
        /^>=\s*(\d+)(?:\.(\d+))?/
          .exec(engines)
          ?.slice(1, 3)
          .map((part) => Number(part ?? 0)) ?? [0, 0]
      );
    };
    const [major, minor] = minimumOf("package.json");
    expect(major).toBeGreaterThanOrEqual(22);
    expect(section("Install")).toContain(`Requirements: Node ${major}.${minor} or later`);
    const [amaroMajor, amaroMinor] = minimumOf("node_modules/amaro/package.json");
    expect(amaroMajor! * 1000 + amaroMinor!).toBeLessThanOrEqual(major! * 1000 + minor!);
  });

  it("runs the guest section's command as written, against the README's guest.mjs", () => {
    const command = /^npx ears (run [^\n]*-- node guest\.mjs)$/m.exec(section("A guest"))?.[1];
    expect(command).toBeDefined();
    rmSync(scratch, { recursive: true, force: true });
    mkdirSync(scratch, { recursive: true });
    writeFileSync(join(scratch, "guest.mjs"), /```js\n(\/\/ guest\.mjs\n[\s\S]*?)```/.exec(readme)?.[1] ?? "");
    writeFileSync(join(scratch, "README.md"), readme);
    // The shell's words: single-quoted arguments as one word each.
    const words = [...command!.matchAll(/'([^']*)'|(\S+)/g)].map((match) => match[1] ?? match[2]!);
    const out = execFileSync(process.execPath, [join(root, "dist/cli/main.js"), ...words], {
      cwd: scratch,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    expect(out).toContain('"echo"');
    expect(out).toContain('"hello": 1');
    rmSync(scratch, { recursive: true, force: true });
  });
});
