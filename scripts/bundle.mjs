// Bundles the compiled modules in dist/ so a guest loads two files at start-up instead of fifteen
// (measured here: importing the package took 14-19 ms as separate modules, 5-8 ms bundled). Every entry
// point is bundled in one pass with code splitting, so shared code (the codec, Outcome, TransportError)
// lives in one chunk and `instanceof` works across entries. The .d.ts files tsc wrote stay as they are.
import { readdirSync, rmSync, renameSync, mkdirSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { rolldown } from "rolldown";
import { makeRunnerCache } from "./runner-cache.mjs";

const dist = new URL("../dist/", import.meta.url).pathname;
// tsc's output, before the bundles below replace it: the cache file's format, shared with the runner.
const { encodeRunnerCache, runnerCacheFile, RUNNER_MAIN_FILE, RUNNER_START_FILE } = await import(
  pathToFileURL(join(dist, "guest/code-cache.js")).href
);
const staging = join(dist, ".bundle");
const entries = {
  index: "index.js",
  "host/index": "host/index.js",
  "testing/index": "testing/index.js",
  "openseek/index": "openseek/index.js",
  schemas: "schemas.js",
  "cli/main": "cli/main.js",
  // runCode's warm type checker: a program the host starts, loading the user's typescript.
  "host/typecheck-server": "host/code/checker-server.js",
  // Code tools for agent frameworks: each loads its framework (an optional peer) and nothing else does.
  "frameworks/ai": "frameworks/ai.js",
  "frameworks/openai-agents": "frameworks/openai-agents.js",
};

const bundle = await rolldown({
  input: Object.fromEntries(Object.entries(entries).map(([name, file]) => [name, join(dist, file)])),
  platform: "node",
  // Optional peers stay imports: the user's copy is loaded lazily when there is one (the MCP SDK by the
  // connectors and `ears mcp`, OpenTelemetry by the host).
  external: [
    /^node:/,
    "zod",
    /^zod\//,
    "fast-check",
    /^@modelcontextprotocol\/sdk(\/|$)/,
    "@opentelemetry/api",
    "ai",
    /^ai\//,
    /^@openai\/agents(-|\/|$)/,
  ],
  treeshake: true,
});
await bundle.write({
  dir: staging,
  format: "esm",
  entryFileNames: "[name].js",
  chunkFileNames: "chunks/[name]-[hash].js",
  minify: false,
  // The whole guest runtime in one chunk: the `.` entry then loads exactly two files.
  codeSplitting: {
    groups: [
      {
        name: "core",
        test: (id) =>
          id.startsWith(dist) &&
          !/^(host|testing|transcripts|openseek|cli|frameworks|code-tool)\/|^(protocol\/)?schemas\.js$/.test(id.slice(dist.length)),
      },
    ],
  },
});
await bundle.close();

// runCode's guest program is a script of its own, dist/guest/code-runner.cjs: one CommonJS file with the guest
// runtime inlined. Every cold run and every pooled runner pays for its loading, and Node loads a CommonJS main
// without its ES module loader: measured here (issue 33), its hello came 6 to 10 ms sooner than the same code
// as an ES module importing the core chunk (the loader's resolve, translate and link steps, and a second file).
// A Node host starts code-runner-cached.cjs instead, a small script that loads code-runner.cjs with the V8 code cache
// made for it just below (src/guest/code-cache.ts): a fresh runner then compiles none of its own code. Deno and Bun
// hosts start code-runner.cjs itself.
for (const [input, output] of [
  ["guest/code-runner.js", RUNNER_MAIN_FILE],
  ["guest/code-runner-start.js", RUNNER_START_FILE],
]) {
  const runner = await rolldown({ input: join(dist, input), platform: "node", external: [/^node:/], treeshake: true });
  await runner.write({ file: join(staging, "guest", output), format: "cjs", minify: false });
  await runner.close();
}
const cacheBytes = await makeRunnerCache({
  guestDir: join(staging, "guest"),
  startFile: RUNNER_START_FILE,
  mainFile: RUNNER_MAIN_FILE,
  cacheFile: runnerCacheFile(process.versions.v8),
  encode: encodeRunnerCache,
});
process.stderr.write(`bundle: the code runner's V8 code cache for V8 ${process.versions.v8}, ${cacheBytes} bytes\n`);

// Replace tsc's JavaScript with the bundle; keep the declarations.
for (const file of readdirSync(dist, { recursive: true, encoding: "utf8" })) {
  if (file.startsWith(".bundle") || !file.endsWith(".js")) continue;
  rmSync(join(dist, file));
}
for (const file of readdirSync(staging, { recursive: true, encoding: "utf8", withFileTypes: false })) {
  if (!file.endsWith(".js") && !file.endsWith(".cjs") && !file.endsWith(".cache")) continue;
  const target = join(dist, file);
  mkdirSync(dirname(target), { recursive: true });
  renameSync(join(staging, file), target);
}
rmSync(staging, { recursive: true, force: true });

// The code runner is a program too: no declarations for it or for what only it loads.
for (const file of ["code-runner.d.ts", "code-rehearsal.d.ts", "code-runner-start.d.ts", "code-cache.d.ts"])
  rmSync(join(dist, "guest", file), { force: true });

// The CLI is a program, not an API: its declarations are not published (nothing public refers to them).
for (const file of readdirSync(join(dist, "cli"), { encoding: "utf8" })) {
  if (file.endsWith(".d.ts")) rmSync(join(dist, "cli", file));
}

// fast-check, zod, ai and @openai/agents are optional peer dependencies: the entries that need one load it through a small
// front module, so a missing peer is reported as what to install, not as Node's resolution error. The
// front imports the bundled entry dynamically (a static re-export would be linked, and fail, before any
// check could run) and re-exports its names, read here from the entry itself.
const peerEntries = [
  { file: "testing/index.js", entry: "@posoco/ears/testing", peer: "fast-check", install: "npm install --save-dev fast-check" },
  { file: "schemas.js", entry: "@posoco/ears/schemas", peer: "zod", install: "npm install zod" },
  { file: "frameworks/ai.js", entry: "@posoco/ears/ai", peer: "ai", install: "npm install ai" },
  {
    file: "frameworks/openai-agents.js",
    entry: "@posoco/ears/openai-agents",
    peer: "@openai/agents",
    install: "npm install @openai/agents",
  },
];
for (const { file, entry, peer, install } of peerEntries) {
  const front = join(dist, file);
  const body = join(dirname(front), `${basename(file, ".js")}.main.js`);
  renameSync(front, body);
  const names = Object.keys(await import(pathToFileURL(body).href));
  if (names.includes("default")) throw new Error(`${file}: a default export cannot be re-exported by name`);
  writeFileSync(
    front,
    `// ${entry} needs ${peer}, an optional peer dependency: say what to install when it is missing.
let entry;
try {
  entry = await import("./${basename(body)}");
} catch (error) {
  if (error?.code === "ERR_MODULE_NOT_FOUND" && String(error.message).includes("'${peer}'")) {
    throw new Error("${entry} needs ${peer}, an optional peer dependency that is not installed: ${install}", { cause: error });
  }
  throw error;
}
export const { ${names.join(", ")} } = entry;
`,
  );
}
