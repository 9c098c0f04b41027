// Shared measuring discipline: forced GC before every timed run, equal warm-up, contenders
// alternated (the order rotates every repetition so none always runs first or last).
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { performance } from "node:perf_hooks";

setFlagsFromString("--expose-gc");
/** A full garbage collection, so garbage left by one contender is not collected on another's time. */
export const gc = runInNewContext("gc");

/** The contender list rotated by `shift`. */
export function rotate(list, shift) {
  const k = shift % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}

/**
 * Runs `measure(contender, repetition)` for every contender, `repetitions` times, in rotating order,
 * after one warm-up call each (`warmUp(contender)`). Returns samples per contender name. A contender
 * whose measure returns `{ overBudget: true }` is not run again (it is reported as over budget).
 */
export async function alternate(contenders, repetitions, measure, warmUp) {
  const samples = Object.fromEntries(contenders.map((c) => [c.name, []]));
  const overBudget = new Set();
  if (warmUp !== undefined) for (const contender of contenders) await warmUp(contender);
  for (let rep = 0; rep < repetitions; rep++) {
    for (const contender of rotate(contenders, rep)) {
      if (overBudget.has(contender.name)) continue;
      gc();
      const sample = await measure(contender, rep);
      if (sample?.overBudget) overBudget.add(contender.name);
      else samples[contender.name].push(sample);
    }
  }
  return { samples, overBudget };
}

/** Milliseconds taken by an async function, and its value. */
export async function timed(fn) {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}
