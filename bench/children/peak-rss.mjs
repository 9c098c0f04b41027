// Children report their own peak resident set size on stderr as they exit (stderr on a pipe is
// synchronous on POSIX, so the line is not lost), for the parent to pick up.
export const PEAK_RSS_PREFIX = "bench-peak-rss-kb=";

export function reportPeakRss() {
  process.on("exit", () => {
    process.stderr.write(`${PEAK_RSS_PREFIX}${process.resourceUsage().maxRSS}\n`);
  });
}

/** The peak RSS in bytes a child reported in its stderr text, or undefined. */
export function peakRssFrom(stderr) {
  const match = new RegExp(`${PEAK_RSS_PREFIX}(\\d+)`).exec(stderr ?? "");
  return match === null ? undefined : Number(match[1]) * 1024;
}
