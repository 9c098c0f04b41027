#!/usr/bin/env node
// Builds the Landlock helper (native/ears-confine.c) and the mount helper (native/ears-mount.c) into
// dist/native/, static, for both architectures the package ships: linux-x64 with musl-gcc, linux-arm64 with
// aarch64-linux-gnu-gcc (glibc's static libc). A missing compiler fails the build with the apt line that
// installs it (scripts/system-packages.mjs does that for the tests and .ci/run): a package without its helpers
// would refuse every run where bubblewrap cannot start. EARS_SKIP_NATIVE=1 builds without them, for a checkout
// that never needs Landlock (the host then says the helper is missing when it would have used it, and mounts
// through mount(8) and umount(8)).
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const helpers = ["ears-confine", "ears-mount"];
const out = fileURLToPath(new URL("../dist/native/", import.meta.url));
const targets = [
  { arch: "linux-x64", cc: "musl-gcc", pkg: "musl-tools" },
  { arch: "linux-arm64", cc: "aarch64-linux-gnu-gcc", pkg: "gcc-aarch64-linux-gnu" },
];
const flags = ["-static", "-Os", "-s", "-std=c11", "-Wall", "-Wextra", "-Werror", "-fno-strict-aliasing"];

if (process.env.EARS_SKIP_NATIVE === "1") {
  console.error("build-native: EARS_SKIP_NATIVE=1: the helpers are not built (runs that need Landlock will be refused)");
  process.exit(0);
}
mkdirSync(out, { recursive: true });
const missing = targets.filter(({ cc }) => spawnSync(cc, ["--version"], { stdio: "ignore" }).error !== undefined);
if (missing.length > 0) {
  console.error(
    `build-native: ${missing.map(({ cc }) => cc).join(" and ")} not found; the Landlock helper is built with them: ` +
      `apt-get install ${missing.map(({ pkg }) => pkg).join(" ")} (or EARS_SKIP_NATIVE=1 to build without the helper)`,
  );
  process.exit(1);
}
for (const helper of helpers) {
  const source = fileURLToPath(new URL(`../native/${helper}.c`, import.meta.url));
  for (const { arch, cc } of targets) {
    const name = `${helper}-${arch}`;
    const built = spawnSync(cc, [...flags, "-o", `${out}${name}`, source], { stdio: ["ignore", "inherit", "inherit"] });
    if (built.status !== 0) {
      console.error(`build-native: ${cc} failed to build ${name}`);
      process.exit(1);
    }
  }
}
