// guest.ts
import { z } from "zod";
import { Outcome, serve, stdio } from "@posoco/ears";
import { tools } from "./contract.js";
await serve({
  wire: stdio(),
  capabilities: tools,
  input: z.object({ path: z.string() }),
  run: async (ears, input) => {
    const text = await ears.call("read", { path: input.path });
    if (Outcome.isError(text)) return text;
    const sum = await ears.call("add", { a: 1, b: 2 });
    if (Outcome.isError(sum)) return sum;
    return { length: text.content.length, sum: sum.structured.sum };
  },
});
