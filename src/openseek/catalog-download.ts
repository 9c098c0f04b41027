/**
 * Download of the MCP host's catalog, once per process and capability: the first search lists the
 * catalog page by page (`{"version":1,"list":{}}`, then `{"list":{"cursor":...}}` until a reply has no
 * `next_cursor`) and later searches reuse it. A failed download is forgotten, so a later search retries.
 */
import { TransportError } from "../protocol/errors.js";
import { CatalogBuilder, parseCatalogPage, type Catalog } from "./catalog.js";
import { decodeResult } from "./envelope.js";
import { MCP_SERVICE, readHandoff, type Handoff } from "./handoff.js";
import { postJson } from "./http.js";
import type { ClientSettings } from "./ptc.js";
import { SearchError } from "./search-error.js";

/** Downloads in progress or done, keyed by the exact `OPENSEEK_MCP` text (each run has its own). */
const catalogs = new Map<string, Promise<Catalog>>();

const CANNOT_DOWNLOAD = "MCP catalog could not be downloaded";

/**
 * The catalog of the current `OPENSEEK_MCP` host, downloaded on first use. Concurrent first searches share
 * one download. Rejects with {@link SearchError} when there is no valid capability or the download fails.
 */
export function loadCatalog(settings: ClientSettings): Promise<Catalog> {
  let handoff: Handoff;
  try {
    handoff = readHandoff(MCP_SERVICE, settings.env);
  } catch (error) {
    return Promise.reject(asSearchError(error));
  }
  const cached = catalogs.get(handoff.capability);
  if (cached !== undefined) return cached;
  const download = downloadCatalog(handoff, settings);
  catalogs.set(handoff.capability, download);
  download.catch(() => {
    if (catalogs.get(handoff.capability) === download) catalogs.delete(handoff.capability);
  });
  return download;
}

async function downloadCatalog(handoff: Handoff, settings: ClientSettings): Promise<Catalog> {
  const builder = new CatalogBuilder();
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (;;) {
    // The first request carries no cursor key at all.
    const list = cursor === undefined ? {} : { cursor };
    let envelope;
    try {
      const reply = await postJson(MCP_SERVICE, handoff, JSON.stringify({ version: 1, list }), { deadlineMs: settings.deadlineMs });
      envelope = decodeResult(MCP_SERVICE, reply);
    } catch (error) {
      throw asSearchError(error);
    }
    if (envelope.isError) throw new SearchError(`${CANNOT_DOWNLOAD}: the host refused the listing: ${envelope.content}`);
    const page = parseCatalogPage(envelope.data);
    builder.add(page.items);
    if (page.nextCursor === undefined) return builder.build();
    if (seen.has(page.nextCursor)) {
      throw new SearchError(
        `${CANNOT_DOWNLOAD}: the host repeated the cursor ${JSON.stringify(page.nextCursor)}, so the listing would never end`,
      );
    }
    seen.add(page.nextCursor);
    cursor = page.nextCursor;
  }
}

function asSearchError(error: unknown): unknown {
  if (error instanceof TransportError) return new SearchError(`${CANNOT_DOWNLOAD}: ${error.message}`, { cause: error });
  return error;
}
