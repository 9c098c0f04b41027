// Cold-start guest in TypeScript: the same as ears-hello.mjs, with a type annotation the runtime must strip.
import { serve, stdio } from "@posoco/ears";

const run = (): undefined => undefined;
await serve({ wire: stdio(), run });
