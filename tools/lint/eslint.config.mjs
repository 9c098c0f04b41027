// ESLint for the whole repository, run from the repository root by scripts/lint.mjs.
// It lives in tools/lint so that typescript-eslint resolves TypeScript 5.9 from here: the package itself builds
// with TypeScript 7, which has no JavaScript API for typescript-eslint to call.
import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

export default tseslint.config(
  { basePath: root },
  { ignores: ["**/node_modules/", "dist/", "coverage/", "reports/", ".stryker-tmp*/", "tools/lint/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Everything here runs on Node (guests may also run on Bun or Deno, which the fixtures test).
    languageOptions: { globals: { ...globals.node, Bun: "readonly", Deno: "readonly" } },
    rules: {
      // A leading underscore names a value left out on purpose (`const { type: _type, ...rest } = frame`).
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_", ignoreRestSiblings: true },
      ],
      // Terminal escaping and the guest-text checks match control characters on purpose.
      "no-control-regex": "off",
      // Prettier wraps code at 140 columns but never breaks a string; this rule catches the long strings
      // too (long messages are split into parts). Deprecated in ESLint 9 in favour of @stylistic, it still
      // works, and one rule does not justify another dependency.
      "max-len": ["error", { code: 140, ignoreUrls: true, ignoreRegExpLiterals: true }],
    },
  },
  {
    // Type-aware: a promise nobody awaits is an unhandled rejection waiting to happen, and in a test an
    // un-awaited `expect(...).rejects` is a test that cannot fail.
    files: ["src/**/*.ts", "test/**/*.ts"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: root } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
    },
  },
  {
    // Type tests declare values only for their types, and check how `any` flows on purpose.
    files: ["test-d/**/*.ts"],
    rules: { "@typescript-eslint/no-unused-vars": ["error", { args: "none" }], "@typescript-eslint/no-explicit-any": "off" },
  },
);
