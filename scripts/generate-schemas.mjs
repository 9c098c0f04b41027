#!/usr/bin/env node
// Writes wire/schemas/*.schema.json from the zod schemas of record (src/protocol/schemas.ts, built to dist/schemas.js).
// Run after `npm run build`: node scripts/generate-schemas.mjs
// test/protocol/schemas.test.ts regenerates them in memory and fails when the committed files drift.
import { readdirSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
let schemas;
try {
  schemas = await import(new URL("../dist/schemas.js", import.meta.url).href);
} catch (error) {
  process.stderr.write(`generate-schemas: cannot load dist/schemas.js (${error.message}); run \`npm run build\` first\n`);
  process.exit(1);
}

const folder = join(root, "wire", "schemas");
mkdirSync(folder, { recursive: true });
const documents = schemas.wireJsonSchemas();
// Files of schemas that no longer exist would mislead readers in other languages.
for (const file of readdirSync(folder)) {
  if (file.endsWith(".schema.json") && !(file in documents)) rmSync(join(folder, file));
}
for (const [file, document] of Object.entries(documents)) {
  writeFileSync(join(folder, file), `${JSON.stringify(document, null, 2)}\n`);
}
process.stdout.write(`generate-schemas: wrote ${Object.keys(documents).length} files to wire/schemas/\n`);
