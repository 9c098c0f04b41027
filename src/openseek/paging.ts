/**
 * Paging of search matches: at most `limit` entries from `offset` whose texts fit in a character budget.
 * Pure: it sees entries only as texts, rendered on demand.
 */

/** Tools per page when the search does not say. */
export const DEFAULT_LIMIT = 8;
/** Characters (UTF-16 code units) the tool entries of one page may take together. */
export const PAGE_BUDGET = 40_000;

/** The entries of one page and where the next page starts. */
export interface PageSlice {
  /** Entry texts, the first possibly cut to fit the budget. */
  entries: string[];
  /** Index of the first entry after this page; absent on the last page. */
  nextOffset?: number;
}

/**
 * Takes entries `offset`, `offset + 1`, ... while fewer than `limit` are taken and their texts together
 * stay within `budget`. The first entry is always taken (cut by {@link cutEntry} when it alone exceeds the
 * budget), so a page is never empty before the end and paging always advances. `offset` must be within
 * `0..total`; `offset == total` gives an empty last page.
 */
export function paginate(
  total: number,
  offset: number,
  limit: number,
  entryText: (index: number) => string,
  budget: number = PAGE_BUDGET,
): PageSlice {
  const entries: string[] = [];
  let used = 0;
  let index = offset;
  while (index < total && entries.length < limit) {
    const text = entryText(index);
    if (entries.length === 0) {
      const fitted = text.length > budget ? cutEntry(text, budget) : text;
      entries.push(fitted);
      used = fitted.length;
    } else {
      if (used + text.length > budget) break;
      entries.push(text);
      used += text.length;
    }
    index++;
  }
  return index < total ? { entries, nextOffset: index } : { entries };
}

/**
 * Cuts `text` to exactly `budget` characters or fewer, ending with a visible marker that says how much was
 * left out. Never splits a surrogate pair.
 */
export function cutEntry(text: string, budget: number): string {
  const marker =
    `\n[... entry cut: ${text.length} characters do not fit the ${budget}-character page; ` +
    "the full schemas are in the page's tools records]";
  let keep = Math.max(0, budget - marker.length);
  const last = text.charCodeAt(keep - 1);
  if (keep > 0 && last >= 0xd800 && last <= 0xdbff) keep--;
  return text.slice(0, keep) + marker;
}
