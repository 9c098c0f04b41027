// A real stdio guest for conformance vectors: `node test/helpers/vectors/vector-guest.mjs wire/vectors/<name>.json`
// runs the vector's program with serve() over stdio(), exactly as a host in any language would start a guest.
// It imports the built package (dist/), so run `npm run build` first.
import { readFileSync } from "node:fs";
import { Outcome, serve, stdio } from "@posoco/ears";
import { vectorProgram } from "./vector-program.mjs";

const vector = JSON.parse(readFileSync(process.argv[2], "utf8"));
await serve({ wire: stdio(vector.guestOptions ?? {}), run: vectorProgram(vector.program, { Outcome }) });
