// Summary statistics and formatting for benchmark samples.

/** Median, min, max, quartiles of a list of numbers (copied, not mutated). */
export function summarize(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return { n: 0, median: NaN, min: NaN, max: NaN, q1: NaN, q3: NaN, samples: [] };
  return {
    n,
    median: quantile(sorted, 0.5),
    min: sorted[0],
    max: sorted[n - 1],
    q1: quantile(sorted, 0.25),
    q3: quantile(sorted, 0.75),
    samples: [...samples],
  };
}

function quantile(sorted, q) {
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low] + (sorted[high] - sorted[low]) * (position - low);
}

/** A number with a sensible count of significant digits for a table. */
export function fmt(value) {
  if (value === undefined || value === null || Number.isNaN(value)) return "n/a";
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString("en-US");
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}

/** "median (min–max)" for a summary. */
export function fmtSpread(summary) {
  if (summary.n === 0) return "n/a";
  if (summary.n === 1) return fmt(summary.median);
  return `${fmt(summary.median)} (${fmt(summary.min)}–${fmt(summary.max)})`;
}

/** Renders rows (arrays of strings) as a plain-text table with a header and aligned columns. */
export function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i] ?? "").length)));
  const line = (cells) =>
    cells
      .map((c, i) => String(c ?? "").padEnd(widths[i]))
      .join(" | ")
      .trimEnd();
  return [line(header), widths.map((w) => "-".repeat(w)).join("-|-"), ...rows.map(line)].join("\n");
}

export const MB = 1e6;
export const MiB = 1024 * 1024;
