/**
 * A durable session's directory from the command line against two hosts and a hostile body (issue 41):
 * two `ears mcp` processes on one --session-dir (the second refused while the first holds it, so no
 * file is lost), `ears exec --workspace` refused meanwhile, and a sparse file in `ears exec --workspace DIR
 * --workspace-size 16M` that must not fill DIR. Real processes, the MCP SDK's own client over stdio.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { diskBytes } from "../helpers/scratch.js";
import { EARS, ears } from "../helpers/spawn-ears.js";

const FS = 'const fs = process.getBuiltinModule("node:fs");\n';
const root = process.platform === "linux" && process.getuid?.() === 0;
const MiB = 1024 * 1024;

type Content = { type: string; text?: string };

async function connect(args: string[]) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [EARS, "mcp", ...args], stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const client = new Client({ name: "test", version: "1" });
  await client.connect(transport);
  return {
    client,
    pid: () => transport.pid,
    stderr: () => stderr,
    text: async (code: string) => {
      const result = (await client.callTool({ name: "run_code", arguments: { code } })) as { content: Content[] };
      return result.content.find((item) => item.type === "text")?.text;
    },
    close: () => client.close(),
  };
}

/** Runs `ears mcp` with stdin closed at once: for one refused before it serves. */
function refused(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [EARS, "mcp", ...args], { stdio: ["pipe", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", fail);
    child.on("close", (code) => done({ code, stderr }));
    child.stdin.end();
  });
}

describe.runIf(root)("a session directory from the command line", () => {
  let base: string;
  beforeAll(() => {
    base = mkdtempSync(join(tmpdir(), "ears-session-dir-"));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it("two ears mcp on one --session-dir: the second is refused naming DIR and the holder, and the first's files are kept", async () => {
    const dir = join(base, "shared");
    const first = await connect(["--session-dir", dir]);
    try {
      expect(await first.text(`${FS}fs.writeFileSync("a.txt", "A's"); return "written";`)).toBe('"written"');
      const second = await refused(["--session-dir", dir]);
      expect(second.code).toBe(64);
      expect(second.stderr).toContain(
        `--session-dir ${JSON.stringify(dir)}: ${dir} is in use by another open session, held by process ${first.pid()}`,
      );
      const exec = await ears(["exec", "--workspace", dir, "--code", `${FS}fs.writeFileSync("b.txt", "exec's"); return 1;`]);
      expect(exec.code).toBe(64);
      expect(exec.stderr).toContain("is in use by another open session");
      // The first goes on with its files, and DIR holds them.
      expect(await first.text(`${FS}return fs.readdirSync(".").sort();`)).toBe('[\n  "a.txt"\n]');
      expect(readFileSync(join(dir, "a.txt"), "utf8")).toBe("A's");
    } finally {
      await first.close();
    }
    // Closed: the next one continues the session.
    const next = await connect(["--session-dir", dir]);
    try {
      expect(await next.text(`${FS}return fs.readFileSync("a.txt", "utf8");`)).toBe('"A\'s"');
    } finally {
      await next.close();
    }
  });

  it("ears mcp: a byte name and 2,100 nested directories do not break the session; no host path reaches the model", async () => {
    const dir = join(base, "names");
    const mcp = await connect(["--session-dir", dir]);
    try {
      const planted = await mcp.text(`${FS}fs.writeFileSync(Buffer.from("bad\\xff", "latin1"), "x");
const top = process.cwd(); fs.mkdirSync("deep"); process.chdir("deep");
for (let i = 0; i < 2100; i++) { fs.mkdirSync("d"); process.chdir("d"); }
process.chdir(top); fs.writeFileSync("ok.txt", "ok"); return "planted";`);
      expect(planted).toBe('"planted"');
      const next = (await mcp.client.callTool({ name: "run_code", arguments: { code: `${FS}return fs.readdirSync(".").sort();` } })) as {
        content: Content[];
        isError?: boolean;
      };
      expect(next.isError).not.toBe(true);
      expect(next.content[0]?.text).toBe('[\n  "deep",\n  "ok.txt"\n]');
      expect(JSON.stringify(next.content)).not.toContain("/tmp/");
      expect((await mcp.client.listResources()).resources.map((resource) => resource.name)).toContain("ok.txt");
    } finally {
      await mcp.close();
    }
    // Closed: the lock is gone, and DIR holds what the workspace kept.
    expect(readdirSync(dir).sort()).toEqual(["deep", "ok.txt"]);
  });

  it("ears exec --workspace DIR --workspace-size 16M: a 1 GiB sparse file never fills DIR, and the next exec works", async () => {
    const dir = join(base, "sparse");
    const run = await ears([
      "exec",
      "--workspace",
      dir,
      "--workspace-size",
      "16M",
      "--code",
      `${FS}fs.writeFileSync("keep.txt", "kept"); const fd = fs.openSync("sparse.bin", "w"); fs.ftruncateSync(fd, 1024 ** 3);
fs.truncateSync("keep.txt", 4); const grow = fs.openSync("grow.bin", "w");
try { for (;;) fs.writeSync(grow, Buffer.alloc(MiB, 1)); } catch (e) { return e.code; }`.replace("MiB", String(MiB)),
    ]);
    expect(run.stdout.trim()).toBe('"ENOSPC"');
    expect(run.code).toBe(0);
    expect(diskBytes(dir)).toBeLessThan(16 * MiB + 64 * 1024);
    expect(readdirSync(dir)).not.toContain("sparse.bin");
    const next = await ears([
      "exec",
      "--workspace",
      dir,
      "--workspace-size",
      "16M",
      "--code",
      `${FS}return fs.readFileSync("keep.txt", "utf8");`,
    ]);
    expect(next.stdout.trim()).toBe('"kept"');
    expect(next.code).toBe(0);
  });
});
