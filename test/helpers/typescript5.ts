/**
 * TypeScript 5.9 for the tests that must also pass with a 5.x release (the package builds with 7): its own
 * package in tools/typescript5 (see tool-folders.ts). A dev dependency alias in the root would do, but its
 * `tsc` bin takes over node_modules/.bin/tsc, which the build uses.
 */
import { installedToolFolder } from "./tool-folders.js";

/** The directory of the installed TypeScript 5.9 package (installing it first if needed). */
export function typeScript5(): string {
  return `${installedToolFolder("typescript5")}node_modules/typescript`;
}
