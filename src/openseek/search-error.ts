/**
 * An MCP catalog search could not run: bad search options, an unknown server, an offset past the end, or
 * a catalog that could not be downloaded (no MCP host, a transport failure, a refused or malformed
 * listing). The message is the reason. A search changes nothing on the host, so it is safe to run again;
 * a failed download is not cached, so the next search downloads again.
 */
export class SearchError extends Error {
  override name = "SearchError";

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
  }
}
