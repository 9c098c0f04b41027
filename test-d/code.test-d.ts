// Type tests for code bodies (issue 12), checked by `tsc -p test-d` in `npm test` against the built package.
import { expectTypeOf } from "vitest";
import { z } from "zod";
import type { DeclarationOptions } from "@posoco/ears";
import {
  closeTypeChecker,
  createRunPool,
  runCode,
  type CodeOptions,
  type RunPool,
  type RunPoolOptions,
  type RunReport,
} from "@posoco/ears/host";
import { tools } from "./sample/contract.js";

expectTypeOf(tools.declarations()).toEqualTypeOf<string>();
expectTypeOf(tools.declarations({ input: z.object({ path: z.string() }) })).toEqualTypeOf<string>();
expectTypeOf<DeclarationOptions["input"]>().not.toBeAny();

const report = await runCode({
  code: "return 1;",
  capabilities: tools.implement({ read: ({ path }) => path, add: ({ a, b }) => ({ sum: a + b }) }),
  contract: tools,
  inputSchema: z.object({ path: z.string() }),
  typecheck: true,
  input: { path: "README.md" },
  sandbox: "auto",
});
expectTypeOf(report).toEqualTypeOf<RunReport>();
if (report.ok) expectTypeOf(report.outcome.status).toEqualTypeOf<"success">();

// @ts-expect-error: runCode runs its own runner: no command
void runCode({ code: "", command: "node" } satisfies CodeOptions);
// @ts-expect-error: code is required
void runCode({ typecheck: true });
// @ts-expect-error: code is a string
void runCode({ code: 1 });

// The warm type checker's close takes nothing and resolves with nothing (issue 20).
expectTypeOf(closeTypeChecker).toEqualTypeOf<() => Promise<void>>();

// Run pools (issue 20): a pool is passed as `pool`; the report says `pooled`.
const pool = createRunPool({ size: 2, sandbox: true, limits: { memoryBytes: 256 * 1024 * 1024 } });
expectTypeOf(pool).toEqualTypeOf<RunPool>();
expectTypeOf(pool.ready).toEqualTypeOf<number>();
expectTypeOf(pool.close()).toEqualTypeOf<Promise<void>>();
const pooled = await runCode({ code: "return 1;", pool });
expectTypeOf(pooled.pooled).toEqualTypeOf<true | undefined>();
expectTypeOf<RunPoolOptions["size"]>().toEqualTypeOf<number | undefined>();
// @ts-expect-error: a pool is made by createRunPool, not written by hand
void runCode({ code: "", pool: { size: 1 } });
// @ts-expect-error: size is a number
void createRunPool({ size: "2" });
