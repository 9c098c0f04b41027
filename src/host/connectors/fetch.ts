/**
 * `fetch` as a capability: a body asks the host for an HTTP request, and the host is the egress. Only
 * listed origins are contacted; every address a name resolves to is checked, and the connection goes to
 * the checked address (no second lookup an attacker's DNS could answer differently); redirects are
 * checked hop by hop; the response is capped while it streams; headers configured for an origin (a
 * token) are added by the host for that origin only, and the body never sees them.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import type { CapabilityContext, CapabilitySpec } from "../../contract/contract.js";
import { jsonSchema } from "../../contract/json-schema.js";
import { describeError } from "../../protocol/errors.js";
import type { Json } from "../../protocol/json.js";
import { Outcome } from "../../protocol/outcome.js";
import { quotedExcerpt } from "../../protocol/text.js";
import { internalRange } from "./addresses.js";

/** One resolved address, as `dns.lookup(name, { all: true })` gives it. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Options of {@link fetchCapability}. */
export interface FetchCapabilityOptions {
  /**
   * The origins (scheme, host and port: `https://api.example.com`, `http://127.0.0.1:8080`) a body may
   * reach. A request or redirect to any other origin is refused before any connection. An address in
   * a loopback, private, link-local (metadata) or other internal range is refused even for a listed
   * name, unless the origin names that address itself (`http://127.0.0.1:8080`, `http://[::1]:3000`).
   */
  allow: readonly string[];
  /**
   * Headers the host adds to every request to an origin, by origin: `{ "https://api.example.com": {
   * Authorization: `Bearer ${process.env.TOKEN}` } }`. They override a body's header of the same name,
   * are never sent to another origin (not on a redirect either), and are never shown to the body.
   * Every origin here must be in `allow`.
   */
  headers?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** The largest response body, in bytes; a larger one is refused (`ResponseTooLarge`). Default 1 MiB. */
  maxBytes?: number;
  /** Deadline of one request, redirects included, in milliseconds. Default 30 000. */
  timeoutMs?: number;
  /** Redirects followed (each checked against `allow`). Default 5. */
  maxRedirects?: number;
  /** Resolves a host name to all its addresses; default `dns.promises.lookup(name, { all: true })`. For tests. */
  lookup?: (hostname: string) => Promise<readonly ResolvedAddress[]>;
}

/** The failure codes the `fetch` capability answers with. */
export const FetchFailureCode = {
  /** The arguments are not `{ url, method?, headers?, body? }` of strings; nothing was sent. */
  InvalidArguments: "InvalidArguments",
  /** The origin is not allowed, or a resolved address is internal; nothing was sent there. */
  FetchRefused: "FetchRefused",
  /** The response body is larger than `maxBytes`; it was not read further. */
  ResponseTooLarge: "ResponseTooLarge",
  /** The request failed (DNS, connection, TLS, timeout, too many redirects). */
  FetchFailed: "FetchFailed",
} as const;

/** Every sentence the `fetch` capability answers a failure with: one place for this concern's wording. */
const failuresOf = {
  invalid: (problem: string) => Outcome.failure(FetchFailureCode.InvalidArguments, `fetch: ${problem}; nothing was sent`),
  originNotAllowed: (origin: string, allowed: readonly string[], hop: number) =>
    Outcome.failure(
      FetchFailureCode.FetchRefused,
      `fetch: ${hop === 0 ? "" : `a redirect (hop ${hop}) led to `}origin ${quotedExcerpt(origin, 200)}, which is not allowed ` +
        `(allowed: ${allowed.join(", ") || "none"}); nothing was sent to it`,
    ),
  internalAddress: (host: string, address: string, range: string) =>
    Outcome.failure(
      FetchFailureCode.FetchRefused,
      `fetch: ${quotedExcerpt(host, 200)} resolves to ${address}, a ${range} address, which only an origin naming that ` +
        "address itself may reach; nothing was sent",
    ),
  tooLarge: (maxBytes: number) =>
    Outcome.failure(
      FetchFailureCode.ResponseTooLarge,
      `fetch: the response body is larger than ${maxBytes} bytes (maxBytes); it was not read`,
    ),
  timedOut: (ms: number) => Outcome.failure(FetchFailureCode.FetchFailed, `fetch: no complete response within ${ms} ms (timeoutMs)`),
  tooManyRedirects: (max: number) => Outcome.failure(FetchFailureCode.FetchFailed, `fetch: more than ${max} redirects (maxRedirects)`),
  failed: (host: string, error: unknown) =>
    Outcome.failure(FetchFailureCode.FetchFailed, `fetch: the request to ${quotedExcerpt(host, 200)} failed: ${describeError(error)}`),
};

const DEFAULT_MAX_BYTES = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_REDIRECTS = 5;
/** Headers a body may not set: the host computes them, or they would carry its credentials elsewhere. */
const HOST_SET = new Set(["host", "content-length", "transfer-encoding", "connection"]);
/** A body's own headers dropped on a redirect to another origin, as the Fetch standard does. */
const CROSS_ORIGIN_DROPPED = new Set(["authorization", "cookie", "proxy-authorization"]);

/**
 * The contract entry of `fetch`, for `declarations()` (and `defineCapabilities`): what a body passes
 * and what a success's `structured` holds.
 */
export const FETCH_SPEC: CapabilitySpec = {
  description:
    "HTTP request through the host, to the allowed origins only. Resolves to { status, headers, body } (body as UTF-8 text); " +
    "any HTTP status is a success. Failures: FetchRefused, ResponseTooLarge, FetchFailed, InvalidArguments.",
  arguments: jsonSchema({
    type: "object",
    properties: {
      url: { type: "string", description: "An absolute http(s) URL on an allowed origin" },
      method: { type: "string", description: 'Default "GET"' },
      headers: { type: "object", additionalProperties: { type: "string" } },
      body: { type: "string", description: "The request body, sent as UTF-8" },
    },
    required: ["url"],
    additionalProperties: false,
  }),
  structured: jsonSchema({
    type: "object",
    properties: {
      status: { type: "number" },
      headers: { type: "object", additionalProperties: { type: "string" }, description: "Response headers, names in lower case" },
      body: { type: "string" },
    },
    required: ["status", "headers", "body"],
    additionalProperties: false,
  }),
};

interface Settings {
  allow: Map<string, URL>;
  headers: Map<string, [string, string][]>;
  maxBytes: number;
  timeoutMs: number;
  maxRedirects: number;
  lookup: (hostname: string) => Promise<readonly ResolvedAddress[]>;
}

/**
 * A capability handler for `ears.call("fetch", { url, method?, headers?, body? })`, answering
 * `{ status, headers, body }` as `structured` (see {@link FetchCapabilityOptions} for what it refuses).
 * Add {@link FETCH_SPEC} to a contract for the body's types. Throws a TypeError for bad options.
 *
 * @example
 * const capabilities = { fetch: fetchCapability({ allow: ["https://api.github.com"],
 *   headers: { "https://api.github.com": { Authorization: `Bearer ${process.env.GITHUB_TOKEN}` } } }) };
 */
export function fetchCapability(options: FetchCapabilityOptions): (args: Json, ctx: CapabilityContext) => Promise<Outcome> {
  const settings = settingsOf(options);
  return (args, ctx) => fetchFor(settings, args, ctx.signal);
}

function settingsOf(options: FetchCapabilityOptions): Settings {
  if (typeof options !== "object" || options === null) throw new TypeError("fetchCapability: options must be an object { allow, ... }");
  if (!Array.isArray(options.allow)) throw new TypeError("fetchCapability: options.allow must be an array of origins");
  const allow = new Map<string, URL>();
  for (const entry of options.allow) {
    const url = originOf(entry, "options.allow");
    allow.set(url.origin, url);
  }
  const headers = new Map<string, [string, string][]>();
  for (const [origin, set] of Object.entries(options.headers ?? {})) {
    const url = originOf(origin, "options.headers");
    if (!allow.has(url.origin)) throw new TypeError(`fetchCapability: options.headers names ${url.origin}, which is not in options.allow`);
    if (typeof set !== "object" || set === null)
      throw new TypeError(`fetchCapability: options.headers[${JSON.stringify(origin)}] must be an object`);
    const pairs = Object.entries(set).map(([name, value]): [string, string] => {
      if (typeof value !== "string")
        throw new TypeError(`fetchCapability: header ${JSON.stringify(name)} for ${url.origin} must be a string`);
      return [name.toLowerCase(), value];
    });
    headers.set(url.origin, pairs);
  }
  return {
    allow,
    headers,
    maxBytes: positive(options.maxBytes, DEFAULT_MAX_BYTES, "maxBytes"),
    timeoutMs: positive(options.timeoutMs, DEFAULT_TIMEOUT_MS, "timeoutMs"),
    maxRedirects: options.maxRedirects === undefined ? DEFAULT_MAX_REDIRECTS : nonNegative(options.maxRedirects, "maxRedirects"),
    lookup: options.lookup ?? ((hostname) => dnsLookup(hostname, { all: true, verbatim: true })),
  };
}

/** An origin as configured: http(s), nothing but scheme, host and port. Throws a TypeError. */
function originOf(text: unknown, where: string): URL {
  let url: URL;
  try {
    url = new URL(String(text));
  } catch {
    throw new TypeError(`fetchCapability: ${where}: ${JSON.stringify(text)} is not a URL; write an origin like https://api.example.com`);
  }
  if (
    (url.protocol !== "http:" && url.protocol !== "https:") ||
    url.username !== "" ||
    url.password !== "" ||
    url.search !== "" ||
    url.hash !== "" ||
    url.pathname !== "/"
  ) {
    throw new TypeError(`fetchCapability: ${where}: ${JSON.stringify(text)} is not an http(s) origin (scheme, host and port only)`);
  }
  return url;
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!(Number.isSafeInteger(value) && value > 0)) throw new TypeError(`fetchCapability: options.${name} must be a positive integer`);
  return value;
}

function nonNegative(value: number, name: string): number {
  if (!(Number.isSafeInteger(value) && value >= 0)) throw new TypeError(`fetchCapability: options.${name} must be a non-negative integer`);
  return value;
}

interface Request {
  url: URL;
  method: string;
  headers: Map<string, string>;
  body: string | undefined;
}

function requestOf(args: Json): Request | Outcome {
  if (typeof args !== "object" || args === null || Array.isArray(args))
    return failuresOf.invalid("expected { url, method?, headers?, body? }");
  const extra = Object.keys(args).filter((key) => !["url", "method", "headers", "body"].includes(key));
  if (extra.length > 0) return failuresOf.invalid(`unknown argument ${quotedExcerpt(extra[0]!, 64)}`);
  const { url, method = "GET", headers = {}, body } = args;
  if (typeof url !== "string") return failuresOf.invalid("url must be a string");
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return failuresOf.invalid(`${quotedExcerpt(url, 200)} is not an absolute URL`);
  }
  if (typeof method !== "string" || !/^[A-Za-z]+$/.test(method)) return failuresOf.invalid("method must be a word such as GET or POST");
  if (body !== undefined && typeof body !== "string") return failuresOf.invalid("body must be a string");
  if (typeof headers !== "object" || headers === null || Array.isArray(headers))
    return failuresOf.invalid("headers must be an object of strings");
  const own = new Map<string, string>();
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== "string") return failuresOf.invalid(`header ${quotedExcerpt(name, 64)} must be a string`);
    if (HOST_SET.has(name.toLowerCase())) continue;
    own.set(name.toLowerCase(), value);
  }
  return { url: parsed, method: method.toUpperCase(), headers: own, body };
}

async function fetchFor(settings: Settings, args: Json, callSignal: AbortSignal): Promise<Outcome> {
  const request = requestOf(args);
  if (!("url" in request)) return request;
  const deadline = AbortSignal.timeout(settings.timeoutMs);
  const signal = AbortSignal.any([callSignal, deadline]);
  let { url, method, body } = request;
  let own = request.headers;
  for (let hop = 0; ; hop++) {
    const allowed = settings.allow.get(url.origin);
    if (allowed === undefined || url.username !== "" || url.password !== "") {
      return failuresOf.originNotAllowed(url.origin, [...settings.allow.keys()], hop);
    }
    let response: IncomingMessage;
    try {
      const target = await checkedAddress(settings, allowed, url);
      if (!("address" in target)) return target;
      signal.throwIfAborted();
      response = await send(url, method, headersFor(settings, url.origin, own, body), body, target, signal);
    } catch (error) {
      if (callSignal.aborted) throw callSignal.reason;
      if (deadline.aborted) return failuresOf.timedOut(settings.timeoutMs);
      return failuresOf.failed(url.host, error);
    }
    const location = response.headers.location;
    if (response.statusCode !== undefined && [301, 302, 303, 307, 308].includes(response.statusCode) && location !== undefined) {
      response.resume();
      if (hop >= settings.maxRedirects) return failuresOf.tooManyRedirects(settings.maxRedirects);
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        return failuresOf.failed(url.host, new Error(`a redirect to ${quotedExcerpt(location, 200)}, which is not a URL`));
      }
      if (response.statusCode === 303 || ((response.statusCode === 301 || response.statusCode === 302) && method === "POST")) {
        method = "GET";
        body = undefined;
      }
      if (next.origin !== url.origin) own = new Map([...own].filter(([name]) => !CROSS_ORIGIN_DROPPED.has(name)));
      url = next;
      continue;
    }
    try {
      const text = await readCapped(response, settings.maxBytes, signal);
      if (text === undefined) return failuresOf.tooLarge(settings.maxBytes);
      const status = response.statusCode ?? 0;
      return Outcome.success(`HTTP ${status}`, { status, headers: headersOf(response), body: text });
    } catch (error) {
      if (callSignal.aborted) throw callSignal.reason;
      if (deadline.aborted) return failuresOf.timedOut(settings.timeoutMs);
      return failuresOf.failed(url.host, error);
    }
  }
}

/**
 * Resolves the URL's host and checks every address. An internal address is allowed only when the
 * allowed origin names it as an IP literal. Returns the address to connect to, or the refusal.
 */
async function checkedAddress(settings: Settings, allowed: URL, url: URL): Promise<ResolvedAddress | Outcome> {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const family = isIP(host);
  const addresses = family !== 0 ? [{ address: host, family }] : await settings.lookup(host);
  if (addresses.length === 0) throw new Error(`${host} resolved to no address`);
  const named = allowed.hostname.replace(/^\[(.*)\]$/, "$1");
  for (const { address } of addresses) {
    const range = internalRange(address);
    if (range !== undefined && !(isIP(named) !== 0 && named === address)) return failuresOf.internalAddress(host, address, range);
  }
  return addresses[0]!;
}

/** The request's headers: the body's own, then the host's for this origin only (they win). */
function headersFor(settings: Settings, origin: string, own: Map<string, string>, body: string | undefined): Record<string, string> {
  const headers: Record<string, string> = Object.create(null);
  for (const [name, value] of own) headers[name] = value;
  for (const [name, value] of settings.headers.get(origin) ?? []) headers[name] = value;
  if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body));
  return headers;
}

function send(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  target: ResolvedAddress,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  // Connect to the address that was checked: Node would otherwise look the name up again, and a
  // second answer (DNS rebinding) could point somewhere else. TLS still verifies the name.
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as (e: null, a: ResolvedAddress[]) => void)(null, [target]);
    else callback(null, target.address, target.family);
  };
  const options: RequestOptions = { method, headers, signal, lookup: pinned, agent: false };
  return new Promise((resolve, reject) => {
    const request = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, options, resolve);
    request.on("error", reject);
    request.end(body);
  });
}

/** The body as UTF-8 text, or `undefined` once it passes `maxBytes` (the rest is not read). */
function readCapped(response: IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<string | undefined> {
  const declared = Number(response.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    response.destroy();
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onAbort = () => response.destroy(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
    response.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        signal.removeEventListener("abort", onAbort);
        response.destroy();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    response.on("end", () => {
      signal.removeEventListener("abort", onAbort);
      resolve(Buffer.concat(chunks).toString("utf8"));
    });
    response.on("error", (error) => {
      signal.removeEventListener("abort", onAbort);
      reject(error);
    });
  });
}

function headersOf(response: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}
