import { coldStart } from "./scenarios/cold-start.mjs";
const r = await coldStart({ quick: process.argv[2] === "q" });
for (const row of r.rows) console.log(row.contender.padEnd(70), row.summary.median?.toFixed(1), row.summary.min?.toFixed(1), row.summary.max?.toFixed(1));
console.log(r.targets);
