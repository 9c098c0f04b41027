/**
 * BM25 ranking (k1 = 1.2, b = 0.75) over bags of tokens. Pure: the catalog search builds one document per
 * tool and ranks only the tools it searches, so IDF and the average length come from those tools.
 */

/** Term-frequency saturation. */
export const BM25_K1 = 1.2;
/** Length normalisation. */
export const BM25_B = 0.75;

/** One ranked document: its position among the inputs and its score (always above zero). */
export interface Ranked {
  index: number;
  score: number;
}

/**
 * Scores every document against the query terms and returns the documents whose score is above zero,
 * best first; equal scores keep input order. Each distinct query term counts once. IDF is
 * `ln(1 + (N - n + 0.5) / (n + 0.5))` (the non-negative form), so a term found in most documents still
 * counts a little instead of pushing the score below zero.
 */
export function rankBm25(documents: readonly (readonly string[])[], queryTerms: readonly string[]): Ranked[] {
  const terms = [...new Set(queryTerms)];
  const count = documents.length;
  if (count === 0 || terms.length === 0) return [];
  const frequencies = documents.map(termFrequencies);
  const totalLength = documents.reduce((sum, document) => sum + document.length, 0);
  const averageLength = totalLength / count;
  const idf = new Map<string, number>();
  for (const term of terms) {
    let containing = 0;
    for (const frequency of frequencies) if (frequency.has(term)) containing++;
    idf.set(term, Math.log(1 + (count - containing + 0.5) / (containing + 0.5)));
  }
  const ranked: Ranked[] = [];
  documents.forEach((document, index) => {
    const frequency = frequencies[index]!;
    // An all-empty corpus has average length 0; the ratio is then irrelevant because no term matches.
    const lengthRatio = averageLength === 0 ? 1 : document.length / averageLength;
    let score = 0;
    for (const term of terms) {
      const tf = frequency.get(term) ?? 0;
      if (tf === 0) continue;
      score += idf.get(term)! * ((tf * (BM25_K1 + 1)) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * lengthRatio)));
    }
    if (score > 0) ranked.push({ index, score });
  });
  // Array.prototype.sort is stable, so ties keep input (catalog) order.
  return ranked.sort((left, right) => right.score - left.score);
}

function termFrequencies(document: readonly string[]): Map<string, number> {
  const frequencies = new Map<string, number>();
  for (const token of document) frequencies.set(token, (frequencies.get(token) ?? 0) + 1);
  return frequencies;
}
