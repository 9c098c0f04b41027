// Round-trip baseline: a bare NDJSON echo child. Every line read from stdin is written back as is.
import { reportPeakRss } from "./peak-rss.mjs";

reportPeakRss();
let pending = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (text) => {
  const lastNewline = text.lastIndexOf("\n");
  if (lastNewline < 0) {
    pending += text;
    return;
  }
  process.stdout.write(pending + text.slice(0, lastNewline + 1));
  pending = text.slice(lastNewline + 1);
});
