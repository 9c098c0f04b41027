/**
 * `fetchCapability` (issue 19): the host is the egress. Local HTTP servers on 127.0.0.1 record what they
 * receive; refusals of private and metadata addresses use a stubbed lookup and a spy on every socket
 * connect, so no traffic ever goes to them.
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { Socket, type AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { defineCapabilities, type Json } from "../../../src/index.js";
import { fetchCapability, FETCH_SPEC, runCode, type FetchCapabilityOptions } from "../../../src/host/index.js";

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A server on 127.0.0.1 that records each request and answers with `respond`. */
async function recordingServer(
  respond: (request: Seen, reply: import("node:http").ServerResponse) => void,
): Promise<{ origin: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer((request, reply) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    request.on("end", () => {
      const entry = { method: request.method!, url: request.url!, headers: request.headers, body };
      seen.push(entry);
      respond(entry, reply);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

const SECRET = "Bearer s3cr3t-token-value";
const ctx = () => ({ name: "fetch", id: 1, signal: new AbortController().signal });

describe("fetchCapability", () => {
  let api: Awaited<ReturnType<typeof recordingServer>>;
  let other: Awaited<ReturnType<typeof recordingServer>>;
  beforeAll(async () => {
    other = await recordingServer((_, reply) => reply.end("other"));
    api = await recordingServer((request, reply) => {
      if (request.url === "/to-other") return reply.writeHead(302, { location: `${other.origin}/landed` }).end();
      if (request.url === "/to-self") return reply.writeHead(307, { location: "/final" }).end();
      if (request.url === "/big") {
        reply.writeHead(200);
        reply.write("x".repeat(600));
        return reply.end("y".repeat(600));
      }
      if (request.url === "/big-declared") return reply.writeHead(200, { "content-length": "5000" }).end("z".repeat(5000));
      if (request.url === "/silent") return;
      if (request.url === "/loop") return reply.writeHead(302, { location: "/loop" }).end();
      if (request.url === "/bad-location") return reply.writeHead(302, { location: "http://[nope" }).end();
      reply.writeHead(201, { "content-type": "text/plain", "x-answer": "42" }).end(`got ${request.method} ${request.url} ${request.body}`);
    });
  });
  afterAll(() => {
    api.server.closeAllConnections();
    other.server.closeAllConnections();
    api.server.close();
    other.server.close();
  });
  afterEach(() => {
    api.seen.length = 0;
    other.seen.length = 0;
    vi.restoreAllMocks();
  });

  const fetchOf = (options: Partial<FetchCapabilityOptions> = {}) =>
    fetchCapability({ allow: [api.origin], headers: { [api.origin]: { Authorization: SECRET } }, ...options });

  it("sends the allowed origin the request with the configured header, and answers { status, headers, body }", async () => {
    const outcome = await fetchOf()({ url: `${api.origin}/hello?q=1`, method: "post", body: "payload", headers: { "X-Mine": "1" } }, ctx());
    expect(outcome).toMatchObject({
      status: "success",
      content: "HTTP 201",
      structured: { status: 201, body: "got POST /hello?q=1 payload", headers: { "x-answer": "42" } },
    });
    expect(api.seen).toHaveLength(1);
    expect(api.seen[0]!.headers.authorization).toBe(SECRET);
    expect(api.seen[0]!.headers["x-mine"]).toBe("1");
    expect(JSON.stringify(outcome)).not.toContain("s3cr3t");
  });

  it("a body run by runCode gets the answer but never the configured header's value", async () => {
    const contract = defineCapabilities({ fetch: FETCH_SPEC });
    const report = await runCode({
      code: `const r = await ears.call("fetch", { url: input as string });
if (r.status === "failure") return r;
// What the body's process holds, where a leaked secret would be.
const own = (globalThis as any).process;
return { r, env: JSON.stringify(own.env), argv: own.argv };`,
      input: `${api.origin}/from-body`,
      capabilities: { fetch: fetchOf() },
      contract,
      typecheck: true,
    });
    expect(report.failure).toBeUndefined();
    expect(report.outcome).toMatchObject({ status: "success", structured: { r: { structured: { status: 201 } } } });
    expect(api.seen.map((seen) => seen.headers.authorization)).toEqual([SECRET]);
    expect(JSON.stringify(report)).not.toContain("s3cr3t");
  });

  it("never contacts an origin that is not allowed, nor one a redirect leads to", async () => {
    const direct = await fetchOf()({ url: `${other.origin}/direct` }, ctx());
    expect(direct).toMatchObject({ status: "failure", code: "FetchRefused" });
    expect((direct as { content: string }).content).toContain("is not allowed");
    const redirected = await fetchOf()({ url: `${api.origin}/to-other` }, ctx());
    expect(redirected).toMatchObject({ status: "failure", code: "FetchRefused" });
    expect((redirected as { content: string }).content).toContain("a redirect (hop 1) led to origin");
    expect(api.seen.map((seen) => seen.url)).toEqual(["/to-other"]);
    expect(other.seen).toEqual([]);
  });

  it("follows a redirect within the origin, and to another allowed origin without the first one's headers", async () => {
    const same = await fetchOf()({ url: `${api.origin}/to-self` }, ctx());
    expect(same).toMatchObject({ status: "success", structured: { status: 201, body: "got GET /final " } });
    expect(api.seen.map((seen) => [seen.url, seen.headers.authorization])).toEqual([
      ["/to-self", SECRET],
      ["/final", SECRET],
    ]);
    const both = fetchOf({ allow: [api.origin, other.origin] });
    const crossed = await both({ url: `${api.origin}/to-other`, headers: { Authorization: "Bearer the-body-own", Cookie: "a=1" } }, ctx());
    expect(crossed).toMatchObject({ status: "success", structured: { body: "other" } });
    expect(other.seen).toHaveLength(1);
    expect(other.seen[0]!.headers.authorization).toBeUndefined();
    expect(other.seen[0]!.headers.cookie).toBeUndefined();
  });

  it("refuses a name resolving to a metadata or private address before any connection (stubbed lookup)", async () => {
    const connect = vi.spyOn(Socket.prototype, "connect");
    for (const addresses of [
      [{ address: "169.254.169.254", family: 4 }],
      [{ address: "::ffff:169.254.169.254", family: 6 }],
      [{ address: "fd00:ec2::254", family: 6 }],
      // Issue 28 item 12: local-use NAT64 (RFC 8215) and IPv4-translated (RFC 2765) spellings of the metadata address, Teredo.
      [{ address: "64:ff9b:1::a9fe:a9fe", family: 6 }],
      [{ address: "::ffff:0:a9fe:a9fe", family: 6 }],
      [{ address: "2001:0:4136:e378:8000:63bf:3fff:fdd2", family: 6 }],
      // Every address is checked, not only the first.
      [
        { address: "93.184.215.14", family: 4 },
        { address: "10.0.0.5", family: 4 },
      ],
      [{ address: "127.0.0.1", family: 4 }],
    ]) {
      const lookup = vi.fn(async () => addresses);
      const outcome = await fetchCapability({ allow: ["http://metadata.test"], lookup })(
        { url: "http://metadata.test/latest/meta-data" },
        ctx(),
      );
      expect(outcome).toMatchObject({ status: "failure", code: "FetchRefused" });
      expect((outcome as { content: string }).content).toMatch(/resolves to .*, a .* address/);
      expect(lookup).toHaveBeenCalledWith("metadata.test");
    }
    const literal = await fetchOf()({ url: "http://169.254.169.254/latest/meta-data" }, ctx());
    expect(literal).toMatchObject({ status: "failure", code: "FetchRefused" });
    expect(connect).not.toHaveBeenCalled();
  });

  it("connects to the address it checked: the name is looked up once, Node does not look it up again", async () => {
    // The second answer of this stub would be the metadata address (DNS rebinding); the socket must get the first.
    // (A public address, not a documentation one: those are refused now. The connect is intercepted: no packet.)
    const answers = [[{ address: "93.184.215.14", family: 4 }], [{ address: "169.254.169.254", family: 4 }]];
    const lookup = vi.fn(async () => answers.shift()!);
    const pinned: string[] = [];
    vi.spyOn(Socket.prototype, "connect").mockImplementation(function (this: Socket, ...args: unknown[]) {
      const options = (Array.isArray(args[0]) ? args[0][0] : args[0]) as { host: string; lookup: (...a: unknown[]) => void };
      options.lookup(options.host, {}, (_error: unknown, address: string) => pinned.push(address));
      options.lookup(options.host, { all: true }, (_error: unknown, all: { address: string }[]) => pinned.push(all[0]!.address));
      // No traffic: the socket fails before any connection is made.
      process.nextTick(() => this.destroy(new Error("intercepted by the test")));
      return this;
    });
    const outcome = await fetchCapability({ allow: ["http://api.test"], lookup })({ url: "http://api.test/" }, ctx());
    expect(outcome).toMatchObject({ status: "failure", code: "FetchFailed" });
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(pinned).toEqual(["93.184.215.14", "93.184.215.14"]);
  });

  it("refuses an answer larger than maxBytes, streamed or declared, and says so", async () => {
    for (const path of ["/big", "/big-declared"]) {
      const outcome = await fetchOf({ maxBytes: 1000 })({ url: `${api.origin}${path}` }, ctx());
      expect(outcome).toEqual({
        status: "failure",
        code: "ResponseTooLarge",
        content: "fetch: the response body is larger than 1000 bytes (maxBytes); it was not read",
      });
    }
    const fits = await fetchOf({ maxBytes: 1200 })({ url: `${api.origin}/big` }, ctx());
    expect(fits).toMatchObject({ status: "success", structured: { body: "x".repeat(600) + "y".repeat(600) } });
  });

  it("answers FetchFailed when no complete response comes within timeoutMs", async () => {
    const outcome = await fetchOf({ timeoutMs: 200 })({ url: `${api.origin}/silent` }, ctx());
    expect(outcome).toEqual({ status: "failure", code: "FetchFailed", content: "fetch: no complete response within 200 ms (timeoutMs)" });
  });

  it("reaches an IPv6 loopback origin named by its address, and refuses [::1] when only 127.0.0.1 is named", async () => {
    const v6 = createServer((_, reply) => reply.end("over v6"));
    await new Promise<void>((done) => v6.listen(0, "::1", done));
    const origin = `http://[::1]:${(v6.address() as AddressInfo).port}`;
    try {
      const outcome = await fetchCapability({ allow: [origin] })({ url: `${origin}/` }, ctx());
      expect(outcome).toMatchObject({ status: "success", structured: { body: "over v6" } });
      const other = await fetchOf()({ url: `${origin}/` }, ctx());
      expect(other).toMatchObject({ status: "failure", code: "FetchRefused" });
    } finally {
      v6.close();
    }
  });

  it("refuses a URL with user information, and answers FetchFailed for a name that resolves to no address", async () => {
    const userinfo = await fetchOf()({ url: api.origin.replace("http://", "http://user:pw@") + "/" }, ctx());
    expect(userinfo).toMatchObject({ status: "failure", code: "FetchRefused" });
    const nowhere = await fetchCapability({ allow: ["http://nowhere.test"], lookup: async () => [] })(
      { url: "http://nowhere.test/" },
      ctx(),
    );
    expect(nowhere).toEqual({
      status: "failure",
      code: "FetchFailed",
      content: 'fetch: the request to "nowhere.test" failed: nowhere.test resolved to no address',
    });
    expect(api.seen).toEqual([]);
  });

  it("answers FetchFailed for too many redirects, a redirect to no URL, and a refused connection", async () => {
    const loop = await fetchOf({ maxRedirects: 2 })({ url: `${api.origin}/loop` }, ctx());
    expect(loop).toEqual({ status: "failure", code: "FetchFailed", content: "fetch: more than 2 redirects (maxRedirects)" });
    expect(api.seen.map((seen) => seen.url)).toEqual(["/loop", "/loop", "/loop"]);
    const bad = await fetchOf()({ url: `${api.origin}/bad-location` }, ctx());
    expect(bad).toMatchObject({ status: "failure", code: "FetchFailed" });
    expect((bad as { content: string }).content).toContain('a redirect to "http://[nope", which is not a URL');
    // A loopback port nobody listens on (just closed), named explicitly, so only the connection fails.
    const closed = await recordingServer(() => {});
    const { origin } = closed;
    await new Promise((done) => closed.server.close(done));
    const refused = await fetchCapability({ allow: [origin] })({ url: `${origin}/` }, ctx());
    expect(refused).toMatchObject({ status: "failure", code: "FetchFailed" });
    expect((refused as { content: string }).content).toMatch(/^fetch: the request to "127\.0\.0\.1:\d+" failed: .*ECONNREFUSED/);
  });

  it("refuses malformed arguments with InvalidArguments, sending nothing", async () => {
    const cases: [Json, RegExp][] = [
      [null, /expected \{ url/],
      [{ url: 5 }, /url must be a string/],
      [{ url: "not a url" }, /is not an absolute URL/],
      [{ url: `${api.origin}/`, method: "GET /x" }, /method must be a word/],
      [{ url: `${api.origin}/`, headers: { a: 1 } }, /header "a" must be a string/],
      [{ url: `${api.origin}/`, body: {} }, /body must be a string/],
      [{ url: `${api.origin}/`, extra: 1 }, /unknown argument "extra"/],
    ];
    for (const [args, message] of cases) {
      const outcome = await fetchOf()(args, ctx());
      expect(outcome).toMatchObject({ status: "failure", code: "InvalidArguments" });
      expect((outcome as { content: string }).content).toMatch(message);
    }
    expect(api.seen).toEqual([]);
  });

  it("throws a TypeError for options that cannot be right", () => {
    expect(() => fetchCapability({ allow: ["https://a.example/path"] })).toThrow(/not an http\(s\) origin/);
    expect(() => fetchCapability({ allow: ["ftp://a.example"] })).toThrow(/not an http\(s\) origin/);
    expect(() => fetchCapability({ allow: ["nonsense"] })).toThrow(/is not a URL/);
    expect(() => fetchCapability({ allow: ["https://a.example"], headers: { "https://b.example": { A: "1" } } })).toThrow(
      /names https:\/\/b.example, which is not in options.allow/,
    );
    expect(() => fetchCapability({ allow: ["https://a.example"], maxBytes: 0 })).toThrow(/maxBytes must be a positive integer/);
    expect(() => fetchCapability({ allow: "https://a.example" as never })).toThrow(/allow must be an array/);
    expect(() => fetchCapability({ allow: ["https://a.example"], headers: { "https://a.example": { A: 1 as never } } })).toThrow(
      /header "A" for https:\/\/a.example must be a string/,
    );
    expect(() => fetchCapability({ allow: ["https://a.example"], headers: { "https://a.example": null as never } })).toThrow(
      /must be an object/,
    );
    expect(() => fetchCapability({ allow: ["https://a.example"], maxRedirects: -1 })).toThrow(
      /maxRedirects must be a non-negative integer/,
    );
  });
});
