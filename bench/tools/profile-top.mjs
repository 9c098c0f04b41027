// Summarizes a .cpuprofile written by `node --cpu-prof`: the functions with the most self time, and
// self time per script. Usage: node bench/tools/profile-top.mjs <file.cpuprofile> [rows]
import { readFileSync } from "node:fs";

const [file, rowsText = "25"] = process.argv.slice(2);
if (file === undefined) throw new Error("usage: node bench/tools/profile-top.mjs <file.cpuprofile> [rows]");
const profile = JSON.parse(readFileSync(file, "utf8"));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfUs = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i];
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
const perFunction = new Map();
const perScript = new Map();
for (const [id, us] of selfUs) {
  const { functionName, url, lineNumber } = byId.get(id).callFrame;
  const script = url.replace(/^.*\/(node_modules\/|src\/|dist\/|bench\/)/, "$1") || "(native)";
  const key = `${functionName || "(anonymous)"} ${script}:${lineNumber + 1}`;
  perFunction.set(key, (perFunction.get(key) ?? 0) + us);
  perScript.set(script, (perScript.get(script) ?? 0) + us);
}
const show = (title, map) => {
  console.log(`\n${title}`);
  for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, Number(rowsText))) {
    console.log(`${(us / 1000).toFixed(1).padStart(9)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%  ${key}`);
  }
};
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`);
show("self time by function", perFunction);
show("self time by script", perScript);
