// contract.ts
import { z } from "zod";
import { defineCapabilities } from "@posoco/ears";
export const tools = defineCapabilities({
  read: { description: "Read a UTF-8 file under the root", arguments: z.object({ path: z.string() }) },
  add: { arguments: z.object({ a: z.number(), b: z.number() }), structured: z.object({ sum: z.number() }) },
});
