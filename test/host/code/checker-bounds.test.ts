/**
 * The type checker's own bounds (issue 28, item 2): a check past its memory (the checker's heap, or its
 * cgroup where the host can make one) or its deadline fails that check with words a model can act on,
 * and the next check works; one slow check holds one checker, never the checks behind it. Before the
 * fix a 107 KB body grew the checker to 3 GiB, and under `ears mcp --typecheck` a trivial body waited
 * 40 s behind a slow one.
 */
import { afterAll, describe, expect, it } from "vitest";
import { checkDeclarations, typecheckBody } from "../../../src/host/code/typecheck.js";
import { installedTypeScript, useCheckerSettingsForTests, warmChecker } from "../../../src/host/code/warm-checker.js";
import { hostCgroupPlan } from "../../../src/host/limits/cgroup.js";
import { pidsGoneWithin as goneWithin, treeOf } from "../../helpers/processes.js";
import { typeScript5 } from "../../helpers/typescript5.js";

const loose = checkDeclarations(undefined, undefined, undefined);
const SIMPLER =
  "the body's types are too big or complex to check; use simpler types (fewer mapped, conditional or recursive types), " +
  "or leave annotations out where TypeScript can infer them";

afterAll(() => useCheckerSettingsForTests({}));

describe.runIf(process.platform === "linux")("the type checker's bounds", () => {
  it("a check that holds its checker does not hold the next one: it goes to a second checker", async () => {
    await useCheckerSettingsForTests({ typescript: installedTypeScript()!, deadlineMs: 8000 });
    expect(await typecheckBody("return 1;", loose, undefined)).toBeUndefined();
    const first = warmChecker().pid!;
    // Stopped, the first checker takes as long as it likes over the next check it gets.
    process.kill(first, "SIGSTOP");
    const order: string[] = [];
    const slow = typecheckBody("return 2;", loose, undefined).then((result) => (order.push("slow"), result));
    const quick = await typecheckBody('let a: number = "x";', loose, undefined).then((result) => (order.push("quick"), result));
    expect(quick).toBe("type errors: code.ts:1:5: Type 'string' is not assignable to type 'number'. (TS2322)");
    expect(warmChecker().pids).toHaveLength(2);
    expect(await slow).toBe(`typecheck: the type check took longer than 8 s, the most a check may take: ${SIMPLER}`);
    expect(order).toEqual(["quick", "slow"]);
    expect(await goneWithin([first], 5000)).toEqual([]);
  }, 60_000);

  it("at most two checkers: a third check waits for the first free one, and gets its own answer", async () => {
    await useCheckerSettingsForTests({ typescript: installedTypeScript()! });
    const answers = await Promise.all(
      ["return 1;", 'let a: number = "x";', "const b: string = 1;"].map((body) => typecheckBody(body, loose, undefined)),
    );
    expect(answers[0]).toBeUndefined();
    expect(answers[1]).toMatch(/^type errors: code\.ts:1:5: /);
    expect(answers[2]).toMatch(/^type errors: code\.ts:1:7: /);
    expect(warmChecker().pids.length).toBeLessThanOrEqual(2);
  }, 60_000);

  it("a check past the checker's heap fails with the bound and what to do; the checker is replaced, nothing is left", async () => {
    // TypeScript 5.9 checks in the checker's heap: 40 MiB is less than its standard library needs.
    await useCheckerSettingsForTests({ typescript: typeScript5(), heapMb: 40 });
    const checking = typecheckBody("return 1;", loose, undefined);
    const first = warmChecker().pid!;
    expect(await checking).toBe(`typecheck: the type check needed more than 40 MiB of memory, the most a check may use: ${SIMPLER}`);
    expect(await goneWithin([first], 5000)).toEqual([]);
    await useCheckerSettingsForTests({ typescript: typeScript5() });
    expect(await typecheckBody("const b: string = 1;", loose, undefined)).toMatch(/^type errors: code\.ts:1:7: /);
  }, 120_000);

  it.runIf(hostCgroupPlan().version !== null)(
    "a check past the checker's cgroup fails with the bound, and nothing of the checker is left",
    async () => {
      await useCheckerSettingsForTests({ typescript: installedTypeScript()!, memoryBytes: 24 * 1024 * 1024 });
      const checking = typecheckBody("return 1;", loose, undefined);
      const first = warmChecker().pid!;
      const tree = treeOf(first);
      expect(await checking).toBe(`typecheck: the type check needed more than 24 MiB of memory, the most a check may use: ${SIMPLER}`);
      expect(await goneWithin(tree, 5000)).toEqual([]);
    },
    60_000,
  );
});
