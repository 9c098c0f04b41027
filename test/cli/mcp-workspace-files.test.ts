/**
 * The pieces of `ears mcp`'s session files (src/cli/mcp-workspace.ts) on their own: which strings of a
 * result are names, images by their bytes, the URIs resources/read takes, and the session's bounded read.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { imageType, LIST_PAGE, listResources, MAX_CANDIDATES, namedPaths, pathOfUri, workspaceUri } from "../../src/cli/mcp-workspace.js";
import { createSession, type Session } from "../../src/host/index.js";
import { readSessionFile } from "../../src/host/workspace/index.js";

describe("namedPaths", () => {
  it("takes the content, then the strings of structured depth first, each once and in its normal form", () => {
    expect(namedPaths("a.txt", { x: ["./b.png", { y: "a.txt" }], z: "c/d.csv", n: 3 })).toEqual(["a.txt", "b.png", "c/d.csv"]);
  });

  it("never takes an absolute path, a path climbing out with .., a NUL or the workspace itself", () => {
    expect(namedPaths("", ["/etc/passwd", "../x", "a/../../x", "a\0b", ".", "", "./"])).toEqual([]);
  });

  it("keeps at most MAX_CANDIDATES strings, and a deeply nested result does not overflow the stack", () => {
    expect(
      namedPaths(
        "",
        Array.from({ length: 500 }, (_, i) => `f${i}`),
      ),
    ).toHaveLength(MAX_CANDIDATES);
    let deep: unknown = "deep.txt";
    for (let i = 0; i < 9000; i++) deep = [deep];
    expect(namedPaths("", deep)).toEqual(["deep.txt"]);
  });
});

describe("imageType", () => {
  it("tells PNG, JPEG, GIF (87a and 89a) and WebP by their signatures, and nothing else", () => {
    expect(imageType(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]))).toBe("image/png");
    expect(imageType(Buffer.from([0xff, 0xd8, 0xff, 0xdb]))).toBe("image/jpeg");
    expect(imageType(Buffer.from("GIF87a..."))).toBe("image/gif");
    expect(imageType(Buffer.from("GIF89a..."))).toBe("image/gif");
    expect(imageType(Buffer.from("RIFF\0\0\0\0WEBPVP8L"))).toBe("image/webp");
    for (const other of ["GIF88a", "RIFF\0\0\0\0WAVEfmt ", "\x89PNG", "%PDF-1.7", "", "<svg></svg>"]) {
      expect(imageType(Buffer.from(other, "latin1")), other).toBeUndefined();
    }
  });
});

describe("workspace URIs", () => {
  it("give back the path they were made from, whatever its characters", () => {
    const segment = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !s.includes("/") && s !== "." && s !== "..");
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 4 }), (segments) => {
        const path = segments.join("/");
        const uri = workspaceUri(path);
        expect(uri.startsWith("ears-workspace:///")).toBe(true);
        expect(pathOfUri(uri)).toBe(path);
      }),
      { seed: 32, numRuns: 200 },
    );
  });

  it("refuse another scheme and broken escapes", () => {
    expect(pathOfUri("file:///etc/passwd")).toBeUndefined();
    expect(pathOfUri("ears-workspace://host/x")).toBeUndefined();
    expect(pathOfUri("ears-workspace:///%E0%A4%A")).toBeUndefined();
  });
});

describe.runIf(process.platform === "linux" && process.getuid?.() === 0)("readSessionFile: a bounded read of the workspace", () => {
  let session: Session;
  beforeAll(async () => {
    session = await createSession({
      workspaceBytes: 4 * 1024 * 1024,
      files: { "small.txt": "hello", "big.bin": Buffer.alloc(100_000, 9) },
    });
  });
  afterAll(() => session.close());

  it("reads a file within the bound whole, and past it only its first bytes, saying its size", async () => {
    expect(await readSessionFile(session, "small.txt", 5)).toEqual({ complete: true, size: 5, bytes: Buffer.from("hello") });
    const big = await readSessionFile(session, "big.bin", 1000);
    expect(big).toEqual({ complete: false, size: 100_000, head: Buffer.alloc(64, 9), grew: false });
  });

  it("rejects a missing file, a directory and a path outside the workspace, as readFile does", async () => {
    await session.writeFile("dir/x", "x");
    await expect(readSessionFile(session, "nope", 10)).rejects.toMatchObject({ code: "ENOENT" });
    await expect(readSessionFile(session, "dir", 10)).rejects.toThrow(/dir is a directory/);
    await expect(readSessionFile(session, "../x", 10)).rejects.toThrow(/climbs out of the workspace/);
    await expect(readSessionFile(session, "/etc/passwd", 10)).rejects.toThrow(/is absolute/);
  });

  it("resources/list pages the workspace's files, LIST_PAGE at a time, and refuses a cursor it did not give", async () => {
    const many = await createSession({ workspaceBytes: 8 * 1024 * 1024 });
    try {
      for (let i = 0; i <= LIST_PAGE; i++) await many.writeFile(`d/f${String(i).padStart(4, "0")}`, "x");
      const first = await listResources(many, undefined);
      expect(first.resources).toHaveLength(LIST_PAGE);
      expect(first.resources[0]).toEqual({ uri: "ears-workspace:///d/f0000", name: "d/f0000", size: 1 });
      expect(first.nextCursor).toBe(String(LIST_PAGE));
      const second = await listResources(many, first.nextCursor);
      expect(second).toEqual({ resources: [{ uri: `ears-workspace:///d/f0${LIST_PAGE}`, name: `d/f0${LIST_PAGE}`, size: 1 }] });
      await expect(listResources(many, "-1")).rejects.toThrow(/the cursor "-1" is not one resources\/list gave/);
    } finally {
      await many.close();
    }
  });
});
