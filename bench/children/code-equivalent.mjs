// The program of the code-body scenario's body, written as a guest file: runGuest runs this, runCode runs the body.
import { serve, stdio } from "@posoco/ears";

await serve({
  wire: stdio(),
  run: async (ears) => {
    const r = await ears.call("add", { a: 1, b: 2 });
    if (r.status === "failure") return r;
    return r.structured.sum * 2;
  },
});
