/**
 * Search tokens: lower-cased words split on anything that is not a letter or digit (so on spaces,
 * punctuation and underscores) and on camelCase boundaries, so `listIssues`, `list_issues`, `list-issues`
 * and "list issues" all give `list`, `issues`.
 */
export function tokenize(text: string): string[] {
  const spaced = text
    // fooBar -> foo Bar, foo2Bar -> foo2 Bar
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, "$1 $2")
    // HTTPServer -> HTTP Server (an acronym followed by a capitalised word)
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, "$1 $2");
  const tokens: string[] = [];
  for (const word of spaced.split(/[^\p{L}\p{N}]+/u)) {
    if (word !== "") tokens.push(word.toLowerCase());
  }
  return tokens;
}
