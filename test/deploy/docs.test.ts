/**
 * docs/deploy.md shows its recipes inline; each block marked `<!-- file: PATH -->` must be that file, byte for
 * byte, so what the page says is what test/deploy/ runs and verifies.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CHECKOUT } from "./app.js";

const page = readFileSync(join(CHECKOUT, "docs", "deploy.md"), "utf8");
const blocks = [...page.matchAll(/<!-- file: (\S+) -->\n```\w+\n([\s\S]*?)```\n/g)].map((match) => ({ path: match[1]!, text: match[2]! }));

describe("docs/deploy.md", () => {
  it("shows the four recipe files", () => {
    expect(blocks.map((block) => block.path).sort()).toEqual([
      "docs/deploy/Dockerfile",
      "docs/deploy/ears-host.service",
      "docs/deploy/host.mjs",
      "docs/deploy/pod.yaml",
    ]);
  });

  for (const block of blocks) {
    it(`shows ${block.path} as it is`, () => {
      expect(block.text).toBe(readFileSync(join(CHECKOUT, block.path), "utf8"));
    });
  }

  it("names only tests that exist", () => {
    const named = [...new Set([...page.matchAll(/`(test\/[^`]+\.test\.ts)`/g)].map((match) => match[1]!))];
    expect(named.length).toBeGreaterThanOrEqual(4);
    for (const path of named) expect(() => readFileSync(join(CHECKOUT, path)), path).not.toThrow();
  });
});
