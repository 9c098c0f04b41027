/**
 * `ears mcp` sessions (issue 32): one session per client connection, so consecutive run_code calls share
 * files; files a result names come back as MCP image content (images, by their bytes) or resource links
 * that resources/read serves; --session-dir, --workspace-size, --no-session. Driven by the MCP SDK's own
 * Client over stdio, with hostile results: paths that climb out, links, a FIFO, a growing file, a huge
 * image, a flood of names, a .png that is no image.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, appendFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyForUser, runAs } from "../helpers/as-user.js";
import { EARS } from "../helpers/spawn-ears.js";

const FS = 'const fs = process.getBuiltinModule("node:fs");\n';
const root = process.platform === "linux" && process.getuid?.() === 0;

/** Signatures followed by filler: enough for the magic-byte check, which is all ears looks at. */
const IMAGES: Record<string, Buffer> = {
  "image/png": Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(40, 7)]),
  "image/jpeg": Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(40, 7)]),
  "image/gif": Buffer.concat([Buffer.from("GIF89a"), Buffer.alloc(40, 7)]),
  "image/webp": Buffer.concat([Buffer.from("RIFF"), Buffer.alloc(4), Buffer.from("WEBPVP8 "), Buffer.alloc(40, 7)]),
};

type Content = { type: string; text?: string; data?: string; mimeType?: string; uri?: string; name?: string; size?: number };

interface Connection {
  client: Client;
  stderr: () => string;
  call(code: string, input?: unknown): Promise<{ content: Content[]; isError?: boolean }>;
  close(): Promise<void>;
}

async function connect(args: string[] = [], cwd?: string): Promise<Connection> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [EARS, "mcp", ...args],
    stderr: "pipe",
    ...(cwd ? { cwd } : {}),
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const client = new Client({ name: "test", version: "1" });
  await client.connect(transport);
  return {
    client,
    stderr: () => stderr,
    call: async (code, input) =>
      (await client.callTool({ name: "run_code", arguments: { code, ...(input === undefined ? {} : { input }) } })) as {
        content: Content[];
        isError?: boolean;
      },
    close: () => client.close(),
  };
}

/** Runs `ears mcp` with stdin closed at once: for command lines refused before serving. */
function refused(args: string[], options: { cwd?: string } = {}): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [EARS, "mcp", ...args], {
      stdio: ["pipe", "ignore", "pipe"],
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", fail);
    child.on("close", (code) => done({ code, stderr }));
    child.stdin.end();
  });
}

const texts = (content: Content[]) => content.filter((item) => item.type === "text");
const links = (content: Content[]) => content.filter((item) => item.type === "resource_link");
const images = (content: Content[]) => content.filter((item) => item.type === "image");

describe.runIf(root)("ears mcp: one session per connection (through the pool)", () => {
  let mcp: Connection;
  beforeAll(async () => {
    mcp = await connect(["--pool", "1"]);
  });
  afterAll(async () => {
    await mcp.close();
  });

  it("consecutive run_code calls share their files, as in a notebook", async () => {
    await mcp.call(`${FS}fs.writeFileSync("cell1.txt", "from the first call"); return 1;`);
    const next = await mcp.call(`${FS}return fs.readFileSync("cell1.txt", "utf8");`);
    expect(texts(next.content)[0]!.text).toBe('"from the first call"');
  });

  it("run_code's description says files persist and how to hand one back", async () => {
    const { tools } = await mcp.client.listTools();
    expect(tools[0]!.description).toContain("Files persist between calls: every call works in this conversation's workspace");
    expect(tools[0]!.description).toContain('put its relative path as a string in the result (e.g. `return { chart: "chart.png" }`)');
  });

  it("images a result names come back as image content, told by their bytes; the text is sent once", async () => {
    const input = Object.fromEntries(Object.entries(IMAGES).map(([type, bytes]) => [type.slice(6), bytes.toString("base64")]));
    const result = await mcp.call(
      `${FS}const names = [];\nfor (const [ext, b64] of Object.entries(input)) {\n` +
        '  fs.writeFileSync("pic-" + ext + ".bin", Buffer.from(b64, "base64"));\n' +
        '  names.push("pic-" + ext + ".bin");\n}\nreturn { images: names };',
      input,
    );
    expect(texts(result.content)).toHaveLength(1);
    expect(texts(result.content)[0]!.text).toBe(
      JSON.stringify({ images: ["pic-png.bin", "pic-jpeg.bin", "pic-gif.bin", "pic-webp.bin"] }, null, 2),
    );
    const sent = images(result.content);
    expect(sent.map((item) => item.mimeType)).toEqual(Object.keys(IMAGES));
    expect(sent.map((item) => Buffer.from(item.data!, "base64"))).toEqual(Object.values(IMAGES));
    expect(links(result.content)).toEqual([]);
  });

  it("other files come back as resource links that resources/read serves, and resources/list lists", async () => {
    const result = await mcp.call(
      `${FS}fs.mkdirSync("out", { recursive: true });\nfs.writeFileSync("out/data.csv", "a,b\\n1,2\\n");\n` +
        `fs.writeFileSync("out/raw.bin", Buffer.from([0, 1, 2, 255]));\nreturn ["./out/data.csv", "out/raw.bin", "not a file"];`,
    );
    expect(links(result.content)).toEqual([
      { type: "resource_link", uri: "ears-workspace:///out/data.csv", name: "out/data.csv", size: 8 },
      { type: "resource_link", uri: "ears-workspace:///out/raw.bin", name: "out/raw.bin", size: 4 },
    ]);
    const csv = await mcp.client.readResource({ uri: "ears-workspace:///out/data.csv" });
    expect(csv.contents).toEqual([{ uri: "ears-workspace:///out/data.csv", mimeType: "text/plain", text: "a,b\n1,2\n" }]);
    const raw = await mcp.client.readResource({ uri: "ears-workspace:///out/raw.bin" });
    expect(raw.contents).toEqual([{ uri: "ears-workspace:///out/raw.bin", mimeType: "application/octet-stream", blob: "AAEC/w==" }]);
    const { resources } = await mcp.client.listResources();
    expect(resources).toContainEqual({ uri: "ears-workspace:///out/data.csv", name: "out/data.csv", size: 8 });
    expect(resources).toContainEqual({ uri: "ears-workspace:///cell1.txt", name: "cell1.txt", size: 19 });
  });

  it("a file with a .png name that is not an image is linked, never sent as an image", async () => {
    const result = await mcp.call(`${FS}fs.writeFileSync("fake.png", "just text, not a picture"); return "fake.png";`);
    expect(images(result.content)).toEqual([]);
    expect(links(result.content)).toEqual([{ type: "resource_link", uri: "ears-workspace:///fake.png", name: "fake.png", size: 24 }]);
    const read = await mcp.client.readResource({ uri: "ears-workspace:///fake.png" });
    expect(read.contents[0]).toMatchObject({ mimeType: "text/plain", text: "just text, not a picture" });
  });

  it("../../etc/passwd, an absolute path and a link the body planted are no names; resources/read refuses them", async () => {
    const result = await mcp.call(
      `${FS}fs.symlinkSync("/etc/passwd", "pw"); fs.symlinkSync("/etc", "etc");\n` +
        `return ["../../etc/passwd", "/etc/passwd", "pw", "etc/passwd", "${"../".repeat(20)}etc/passwd"];`,
    );
    expect(result.content.filter((item) => item.type !== "text")).toEqual([]);
    expect(result.isError).toBe(false);
    for (const [uri, message] of [
      ["ears-workspace:///../../etc/passwd", /climbs out of the workspace with \.\./],
      ["ears-workspace:///%2Fetc%2Fpasswd", /is absolute; paths are relative to the workspace/],
      ["ears-workspace:///pw", /no such file in the session's workspace/],
      ["ears-workspace:///etc/passwd", /no such file in the session's workspace/],
      ["file:///etc/passwd", /is not a session file; its URIs start with ears-workspace:\/\/\//],
      ["ears-workspace:///%E0%A4%A", /is not a session file/],
    ] as const) {
      await expect(mcp.client.readResource({ uri }), uri).rejects.toThrow(message);
    }
  });

  it("a FIFO named in the result is neither read (no hang) nor attached", async () => {
    const result = await mcp.call(
      `const { execFileSync } = process.getBuiltinModule("node:child_process");\nexecFileSync("mkfifo", ["pipe"]);\nreturn "pipe";`,
    );
    expect(result.content.filter((item) => item.type !== "text")).toEqual([]);
    await expect(mcp.client.readResource({ uri: "ears-workspace:///pipe" })).rejects.toThrow(/no such file/);
  });

  it("an image too large for --max-result is linked instead, and the text says what was left out and why", async () => {
    const result = await mcp.call(
      `${FS}fs.writeFileSync("huge.png", Buffer.concat([Buffer.from(input, "base64"), Buffer.alloc(2 * 1024 * 1024)])); return "huge.png";`,
      IMAGES["image/png"]!.toString("base64"),
    );
    expect(images(result.content)).toEqual([]);
    const size = IMAGES["image/png"]!.length + 2 * 1024 * 1024;
    expect(links(result.content)).toEqual([
      { type: "resource_link", uri: "ears-workspace:///huge.png", name: "huge.png", size, mimeType: "image/png" },
    ]);
    expect(texts(result.content)[0]!.text).toBe(
      '"huge.png"\n\nhuge.png (image/png, 2 MiB) was not sent as an image: with the rest of the result it passes the 1 MiB of ' +
        "--max-result; it is linked as ears-workspace:///huge.png instead (resources/read).",
    );
    const read = await mcp.client.readResource({ uri: "ears-workspace:///huge.png" });
    expect(Buffer.from((read.contents[0] as { blob: string }).blob, "base64").length).toBe(size);
  });

  it("images share --max-result with the text: the one that does not fit beside the others is linked", async () => {
    const result = await mcp.call(
      `${FS}const png = Buffer.from(input, "base64");\n` +
        `for (const n of ["a", "b"]) fs.writeFileSync(n + ".png", Buffer.concat([png, Buffer.alloc(400 * 1024)]));\n` +
        `return ["a.png", "b.png"];`,
      IMAGES["image/png"]!.toString("base64"),
    );
    expect(images(result.content)).toHaveLength(1);
    expect(links(result.content).map((item) => item.name)).toEqual(["b.png"]);
    expect(texts(result.content)[0]!.text).toContain("b.png (image/png, 400 KiB) was not sent as an image");
  });

  it("resources/read refuses a file over 4 MiB, saying what to do", async () => {
    await mcp.call(`${FS}fs.writeFileSync("big.log", Buffer.alloc(5 * 1024 * 1024, 97)); return null;`);
    await expect(mcp.client.readResource({ uri: "ears-workspace:///big.log" })).rejects.toThrow(
      /big\.log is 5 MiB, over the 4 MiB ears mcp sends in one resources\/read; have a body write a smaller file/,
    );
  });

  it("a flood of names: at most 20 files attached and the rest counted; the walk looks no further than its bounds", async () => {
    const many = await mcp.call(
      `${FS}const names = [];\nfor (let i = 0; i < 30; i++) {\n` +
        `  fs.writeFileSync("f" + i + ".txt", "x");\n  names.push("f" + i + ".txt");\n}\nreturn names;`,
    );
    expect(links(many.content)).toHaveLength(20);
    expect(texts(many.content)[0]!.text).toMatch(/\n\n10 more named files were not attached \(at most 20 a result\)\.$/);
    // The 101st string that could be a path, and a name after 10,000 values, are never looked at.
    const pastStrings = await mcp.call(`return { strings: Array.from({ length: 100 }, (_, i) => "no-such-" + i), late: "f1.txt" };`);
    expect(links(pastStrings.content)).toEqual([]);
    const pastValues = await mcp.call(`return { numbers: Array.from({ length: 10000 }, (_, i) => i), late: "f2.txt" };`);
    expect(links(pastValues.content)).toEqual([]);
    const walked = await mcp.call(`return { numbers: Array.from({ length: 9000 }, (_, i) => i), name: "f3.txt" };`);
    expect(links(walked.content).map((item) => item.name)).toEqual(["f3.txt"]);
  });
});

describe.runIf(root)("ears mcp sessions: processes, --session-dir, --no-session", () => {
  let base: string;
  beforeAll(() => {
    base = mkdtempSync(join(tmpdir(), "ears-mcp-ws-"));
    chmodSync(base, 0o711);
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it("a second ears mcp process has its own session and does not see the first's files", async () => {
    const [first, second] = await Promise.all([connect(["--pool", "0"]), connect(["--pool", "0"])]);
    try {
      await first.call(`${FS}fs.writeFileSync("mine.txt", "first's"); return 1;`);
      const seen = await second.call(`${FS}return [fs.existsSync("mine.txt"), fs.readdirSync(".")];`);
      expect(JSON.parse(texts(seen.content)[0]!.text!)).toEqual([false, []]);
      await expect(second.client.readResource({ uri: "ears-workspace:///mine.txt" })).rejects.toThrow(/no such file/);
      expect((await second.client.listResources()).resources).toEqual([]);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it("--session-dir DIR is kept: DIR holds the files after the process, and a new process continues it", async () => {
    const dir = join(base, "kept");
    const first = await connect(["--session-dir", dir, "--workspace-size", "4M"]);
    await first.call(`${FS}fs.writeFileSync("state.json", JSON.stringify({ step: 1 })); return 1;`);
    await first.close();
    expect(JSON.parse(readFileSync(join(dir, "state.json"), "utf8"))).toEqual({ step: 1 });
    const second = await connect(["--session-dir", dir, "--workspace-size", "4M"]);
    try {
      const read = await second.call(
        `${FS}try { fs.writeFileSync("big", Buffer.alloc(5 * 1024 * 1024)); }\n` +
          `catch (e) { return [e.code, fs.readFileSync("state.json", "utf8")]; }`,
      );
      expect(JSON.parse(texts(read.content)[0]!.text!)).toEqual(["ENOSPC", '{"step":1}']);
      const { tools } = await second.client.listTools();
      expect(tools[0]!.description).toContain("4 MiB in all, past it a write fails with ENOSPC");
    } finally {
      await second.close();
    }
  });

  it("a file growing while it is read is never sent past the bound, and the call answers", async () => {
    // --pool 0: the body's working directory is the workspace's own path, so this test can write into it from outside.
    const mcp = await connect(["--pool", "0", "--max-result", "64K"]);
    let writer: ReturnType<typeof setInterval> | undefined;
    try {
      const where = await mcp.call(
        `${FS}fs.writeFileSync("grow.png", Buffer.from(input, "base64")); return process.cwd();`,
        IMAGES["image/png"]!.toString("base64"),
      );
      const path = join(JSON.parse(texts(where.content)[0]!.text!) as string, "grow.png");
      writer = setInterval(() => appendFileSync(path, Buffer.alloc(4096, 1)), 1);
      const result = await mcp.call(`return "grow.png";`);
      for (const image of images(result.content)) expect(Buffer.from(image.data!, "base64").length).toBeLessThanOrEqual(64 * 1024);
      expect(texts(result.content)[0]!.text).toMatch(/^"grow\.png"/);
    } finally {
      clearInterval(writer);
      await mcp.close();
    }
  });

  it("one session's calls run one at a time: past 64 waiting a call is refused, and a cancelled one runs nothing", async () => {
    // --pool 0: the body's working directory is the workspace's own path, so this test can release the held call.
    const mcp = await connect(["--pool", "0"]);
    try {
      const where = await mcp.call(`return process.cwd();`);
      const workspace = JSON.parse(texts(where.content)[0]!.text!) as string;
      const held = mcp.call(
        `${FS}fs.writeFileSync("started", "");\n` +
          `while (!fs.existsSync("release")) await new Promise((r) => setTimeout(r, 20));\nreturn "held";`,
      );
      while (!existsSync(join(workspace, "started"))) await new Promise((r) => setTimeout(r, 20));
      const cancel = new AbortController();
      const waiting = Array.from({ length: 64 }, () =>
        mcp.client.callTool({ name: "run_code", arguments: { code: `${FS}fs.writeFileSync("waited", ""); return 1;` } }, undefined, {
          signal: cancel.signal,
        }),
      );
      const busy = (await mcp.call("return 'past the bound';")) as { content: Content[]; isError?: boolean };
      expect(busy.isError).toBe(true);
      expect(texts(busy.content)[0]!.text).toMatch(
        /^RunQueueFull: 64 run_code calls are already waiting for the one running: .*Nothing ran/,
      );
      cancel.abort();
      await Promise.allSettled(waiting);
      writeFileSync(join(workspace, "release"), "");
      expect(texts((await held).content)[0]!.text).toBe('"held"');
      const after = await mcp.call(`${FS}return fs.existsSync("waited");`);
      expect(texts(after.content)[0]!.text).toBe("false");
    } finally {
      await mcp.close();
    }
  });

  it("--no-session: each call starts empty, no resources are served, and the description says nothing is kept", async () => {
    const mcp = await connect(["--no-session", "--pool", "0"]);
    try {
      await mcp.call(`${FS}fs.writeFileSync("a.txt", "x"); return 1;`);
      const next = await mcp.call(`${FS}return fs.readdirSync(".");`);
      expect(texts(next.content)[0]!.text).toBe("[]");
      const named = await mcp.call(`${FS}fs.writeFileSync("b.txt", "x"); return "b.txt";`);
      expect(named.content).toHaveLength(1);
      expect(mcp.client.getServerCapabilities()?.resources).toBeUndefined();
      const { tools } = await mcp.client.listTools();
      expect(tools[0]!.description).toContain(
        "Each call starts in an empty private directory, removed after it: no file is kept between calls.",
      );
    } finally {
      await mcp.close();
    }
  });

  it.each([
    [["--no-session", "--session-dir", "x"], "--no-session turns off the session that --session-dir sets up"],
    [["--no-session", "--workspace-size", "8M"], "--no-session turns off the session that --workspace-size sets up"],
    [["--session-dir", "x", "--no-sandbox"], "--session-dir sets up a session, whose runs are sandboxed; drop --no-sandbox"],
    [["--workspace-size", "8M", "--no-sandbox"], "--workspace-size sets up a session, whose runs are sandboxed"],
    [["--workspace-size", "100K"], "--workspace-size 100K is 100 KiB, under the least of 1 MiB"],
  ])("refuses %j as a usage error", async (args, message) => {
    const run = await refused(args, { cwd: base });
    expect(run.stderr).toContain(message);
    expect(run.code).toBe(64);
    expect(existsSync(join(base, "x"))).toBe(false);
  });

  it("refuses a --session-dir holding a link, before serving", async () => {
    const dir = join(base, "linked");
    mkdirSync(dir);
    symlinkSync("/etc/passwd", join(dir, "pw"));
    writeFileSync(join(dir, "ok.txt"), "ok");
    const run = await refused(["--session-dir", dir]);
    expect(run.stderr).toMatch(/ears: --session-dir ".*linked": .*pw is a symbolic link; a workspace holds only files and directories/);
    expect(run.code).toBe(64);
  });

  it("--no-sandbox: no session, said on stderr", async () => {
    const mcp = await connect(["--no-sandbox", "--pool", "0"]);
    try {
      const next = await mcp.call(`return 1;`);
      expect(texts(next.content)).toHaveLength(1);
      expect(mcp.stderr()).toContain(
        "ears mcp: no session, so each body works in a private empty directory and no file is kept between calls: " +
          "--no-sandbox, and a session's runs are sandboxed",
      );
    } finally {
      await mcp.close();
    }
  });

  it('on a host that is not root: serves with a "copy" session, its bodies cold (no pool can take it); --session-dir too', async () => {
    // As nobody, from a copy it can reach: the checkout's parents may be 0700 (a clone under /root).
    const copy = copyForUser({ packages: ["@modelcontextprotocol/sdk", "amaro"] });
    try {
      const dir = copy.dir("for-nobody");
      const asNobody = (args: string[]) => runAs(copy, [copy.ears, "mcp", ...args], { cwd: dir });
      const served = await asNobody([]);
      expect(served.stderr).toContain("ears mcp: the session's workspace is copied into each run's sandbox (this host cannot mount)");
      expect(served.stderr).not.toMatch(/no session/);
      expect(served.code).toBe(0);
      const run = await asNobody(["--session-dir", join(dir, "s"), "--workspace-size", "8M"]);
      expect(run.stderr).not.toMatch(/cannot be bounded/);
      expect(run.code).toBe(0);
      expect(existsSync(join(dir, "s"))).toBe(true);
    } finally {
      copy.remove();
    }
  });
});
