/**
 * What the host and its warm type checker (checker-server.ts) say to each other, one JSON message a
 * line, and the options every body is checked with. Shared by both sides; nothing here runs.
 */

/** The options every body is checked with (a tsconfig.json), whatever the TypeScript (docs/code.md, "typecheck: true"). */
export const CHECK_CONFIG = {
  compilerOptions: {
    strict: true,
    noEmit: true,
    target: "ES2022",
    module: "ESNext",
    moduleResolution: "Bundler",
    lib: ["ES2023", "DOM"],
    types: [],
    skipLibCheck: true,
    // Resolve nothing a body names (a type-level import("/abs/path"), a reference path): the check sees
    // only the body, the declarations and the standard library, never a host file.
    noResolve: true,
  },
  files: ["ears.d.ts", "code.ts"],
};

/** One error in code.ts. */
export interface BodyError {
  line: number;
  column: number;
  code: number;
  /** The message, then each explanation of its chain (depth first), as tsc prints them on their own lines. */
  parts: string[];
}
/** The checker's answer to one request. */
export type CheckAnswer = { id: number; errors: BodyError[]; other: string[] } | { id: number; failed: string };
/** One request to the checker. */
export interface CheckRequest {
  id: number;
  declarations: string;
  code: string;
}
