/**
 * A deployment's install, made by the test from this checkout: a directory with `node_modules/@posoco/ears`
 * (package.json and the built dist/), `node_modules/amaro` (runCode's type stripper) and the test's host
 * scripts, every part readable by any uid. The checkout may sit under a 0700 directory, which an
 * unprivileged uid, a container's user or a bubblewrap without user namespaces could not enter.
 */
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const CHECKOUT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Opens every directory to others (r-x) and every file (r--), keeping the owner's bits. */
function openUp(path: string): void {
  const stat = statSync(path);
  chmodSync(path, stat.mode | (stat.isDirectory() ? 0o755 : 0o644));
  if (stat.isDirectory()) for (const name of readdirSync(path)) openUp(join(path, name));
}

/**
 * Makes the install under a fresh directory of `parent` (default the OS temporary directory, mode 0755) and
 * returns its path; `hosts` are this folder's fixtures copied beside node_modules.
 */
export function makeApp(parent = tmpdir()): string {
  const app = mkdtempSync(join(parent, "ears-app-"));
  const pkg = join(app, "node_modules", "@posoco", "ears");
  mkdirSync(pkg, { recursive: true });
  cpSync(join(CHECKOUT, "package.json"), join(pkg, "package.json"));
  cpSync(join(CHECKOUT, "dist"), join(pkg, "dist"), { recursive: true });
  cpSync(join(CHECKOUT, "node_modules", "amaro"), join(app, "node_modules", "amaro"), { recursive: true });
  cpSync(join(CHECKOUT, "test", "deploy", "fixtures", "attack-host.mjs"), join(app, "attack-host.mjs"));
  cpSync(join(CHECKOUT, "docs", "deploy", "host.mjs"), join(app, "host.mjs"));
  openUp(app);
  return app;
}
