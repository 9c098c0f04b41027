// Starts every build from an empty dist/, so no file of a removed or renamed module is packed.
import { rmSync } from "node:fs";

rmSync(new URL("../dist/", import.meta.url), { recursive: true, force: true });
