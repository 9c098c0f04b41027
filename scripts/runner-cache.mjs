// Makes the code runner's V8 code cache at build time (src/guest/code-cache.ts says what it is and why it is made
// here and never at run time): starts the built runner as a Node host does (`node code-runner-cached.cjs`, no flags),
// with scripts/runner-cache-hook.mjs preloaded, and plays one whole session against it, a pool's warm frame and
// rehearsal first, so the code both a cold and a pooled runner run is compiled; the hook writes V8's cache when
// the runner exits, and this writes it beside the runner with the source it was made from.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HOOK = fileURLToPath(new URL("runner-cache-hook.mjs", import.meta.url));
/** A body through the paths a real one takes: calls with their replies, a log, captured console output, a result. */
const BODY =
  'let sum = 0;\nfor (let i = 0; i < 12; i++) {\n  const r = await ears.call("add", { a: i, b: 1, text: "ü" });\n' +
  '  if (r.status === "failure") return r;\n  sum += r.structured.sum;\n}\n' +
  'await ears.log("added");\nconsole.log("sum", sum);\nreturn { sum, input, list: [1, "a", null, true, { x: 1.5 }] };';

/**
 * Writes `guestDir`/`cacheFile` for the runner proper `guestDir`/`mainFile`, started through its start script `startFile`;
 * `encode(source, data)` is code-cache.ts's encodeRunnerCache. Throws when the session or the cache fails.
 */
export async function makeRunnerCache({ guestDir, startFile, mainFile, cacheFile, encode }) {
  const scratch = mkdtempSync(join(tmpdir(), "ears-runner-cache-"));
  const out = join(scratch, "v8.cache");
  try {
    // No NODE_OPTIONS: V8 refuses a cache made under other flags, and a host starts the runner with none.
    const child = spawn(process.execPath, ["--import", pathToFileURL(HOOK).href, join(guestDir, startFile)], {
      cwd: scratch,
      stdio: ["pipe", "pipe", "pipe"],
      env: { PATH: process.env.PATH ?? "", EARS_RUNNER_CACHE_OUT: out },
    });
    const exited = once(child, "exit");
    let stderr = "";
    let held = "";
    let result;
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.stdout.on("data", (chunk) => {
      held += chunk;
      for (let end = held.indexOf("\n"); end >= 0; end = held.indexOf("\n")) {
        const frame = JSON.parse(held.slice(0, end));
        held = held.slice(end + 1);
        if (frame.type === "hello") {
          const invoke = { type: "invoke", protocol: frame.protocol, allowed: ["add"], input: { n: 1 } };
          child.stdin.write(`{"type":"warm"}\n${JSON.stringify({ type: "body", javascript: BODY })}\n${JSON.stringify(invoke)}\n`);
        } else if (frame.type === "request") {
          const { a, b } = frame.arguments;
          const outcome = { status: "success", content: "", structured: { sum: a + b } };
          child.stdin.write(`${JSON.stringify({ type: "reply", id: frame.id, outcome })}\n`);
        } else if (frame.type === "result") {
          result = frame.outcome;
          child.stdin.end();
        }
      }
    });
    const [code] = await exited;
    if (code !== 0 || result?.status !== "success" || result.structured?.sum !== 78) {
      throw new Error(`runner-cache: the runner's session failed (exit ${code}, result ${JSON.stringify(result)}): ${stderr}`);
    }
    const data = readFileSync(out);
    writeFileSync(join(guestDir, cacheFile), encode(readFileSync(join(guestDir, mainFile)), data));
    return data.length;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

// `node scripts/runner-cache.mjs`: makes the cache for the V8 of the Node running it, in the build's dist/guest/,
// beside the one `npm run build` made for its own Node (scripts/test-nodes.mjs runs it with each Node it tests
// on). The file's head (the format's magic, the source's length, the source) is the same for every V8: it is
// taken from the build's cache, after checking that it holds the runner's source as it is on disk.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const guestDir = fileURLToPath(new URL("../dist/guest/", import.meta.url));
  const mainFile = "code-runner.cjs";
  const source = readFileSync(join(guestDir, mainFile));
  const made = readdirSync(guestDir).find((name) => /^code-runner\.v8-.*\.cache$/.test(name));
  const existing = made === undefined ? undefined : readFileSync(join(guestDir, made));
  const at = existing?.indexOf(source) ?? -1;
  if (existing === undefined || at <= 0) {
    console.error("runner-cache: dist/guest/ holds no cache made by the build for this runner: run npm run build first");
    process.exit(1);
  }
  const head = existing.subarray(0, at + source.length);
  const v8 = process.versions.v8;
  const cacheFile = `code-runner.v8-${v8.replace(/[^0-9A-Za-z.-]/g, "_")}.cache`;
  const bytes = await makeRunnerCache({
    guestDir,
    startFile: "code-runner-cached.cjs",
    mainFile,
    cacheFile,
    encode: (_source, data) => Buffer.concat([head, data]),
  });
  console.error(`runner-cache: ${cacheFile} for Node ${process.version}, ${bytes} bytes`);
}
