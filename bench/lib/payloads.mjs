// Deterministic payloads shared by every contender: the same logical messages are encoded once as
// protocol 1 frames (ours, ndjson, the baseline) and once as the equivalent MCP JSON-RPC messages.

/** A small seeded PRNG (mulberry32) so every run and every contender sees the same bytes. */
export function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Mostly ASCII, with some 2-, 3- and 4-byte UTF-8 characters, like real tool output.
const WORDS = [
  "the",
  "file",
  "read",
  "line",
  "const",
  "value",
  "return",
  "import",
  "export",
  "function",
  "error",
  "result",
  "module",
  "path",
  "async",
  "await",
  "host",
  "guest",
  "frame",
  "café",
  "naïve",
  "读取",
  "文件",
  "🎉",
  "—",
  "Ωmega",
  "data",
  "index",
  "config",
  "test",
];

const WORD_BYTES = WORDS.map((word) => Buffer.byteLength(word) + 1);

/** Text of about `bytes` UTF-8 bytes (never cut inside a character). */
export function text(rand, bytes) {
  const parts = [];
  let size = 0;
  while (size < bytes) {
    const pick = Math.floor(rand() * WORDS.length);
    parts.push(WORDS[pick]);
    size += WORD_BYTES[pick];
    if (rand() < 0.08) {
      parts.push("\n");
      size += 2;
    }
  }
  return parts.join(" ");
}

/** An array of records whose JSON text is about `bytes` long: the shape of a listing or a query result. */
export function records(rand, bytes) {
  const list = [];
  let size = 2;
  let i = 0;
  while (size < bytes) {
    const record = {
      id: i,
      path: `src/module-${i % 97}/file-${i}.ts`,
      size: Math.floor(rand() * 100000),
      ok: rand() < 0.9,
      tags: ["a", "b", "c"].slice(0, 1 + (i % 3)),
      summary: text(rand, 40 + Math.floor(rand() * 80)),
    };
    list.push(record);
    size += Buffer.byteLength(JSON.stringify(record)) + 1;
    i++;
  }
  return list;
}

const NAMES = ["read", "list", "search", "write"];

/**
 * The logical messages of the decode-throughput stream: mostly small requests, replies and logs,
 * and one 1 MB reply after about every 2 MB of small frames, until the protocol 1 encoding reaches
 * `totalBytes`. Returns both encodings as single buffers plus frame counts.
 */
export function mixedStream(totalBytes, seed = 1) {
  const rand = random(seed);
  const ears = [];
  const mcp = [];
  let earsBytes = 0;
  let sinceBig = 0;
  let id = 1;
  let big = 0;
  const add = (earsFrame, mcpMessage) => {
    const a = JSON.stringify(earsFrame);
    const b = JSON.stringify(mcpMessage);
    ears.push(a);
    mcp.push(b);
    earsBytes += Buffer.byteLength(a) + 1;
    return Buffer.byteLength(a) + 1;
  };
  while (earsBytes < totalBytes) {
    if (sinceBig >= 2e6) {
      sinceBig = 0;
      big++;
      // Alternate text-heavy and structure-heavy 1 MB replies.
      const content = big % 2 === 0 ? text(rand, 1e6) : "";
      const structured = big % 2 === 0 ? undefined : { records: records(rand, 1e6) };
      add(reply(id, content, structured), mcpReply(id, content, structured));
      id++;
      continue;
    }
    const roll = rand();
    let size;
    if (roll < 0.4) {
      const args = { path: `src/module-${id % 97}/file-${id}.ts`, line: id % 500, recursive: rand() < 0.5 };
      const name = NAMES[id % NAMES.length];
      size = add(
        { type: "request", id, name, arguments: args },
        {
          jsonrpc: "2.0",
          id,
          method: "tools/call",
          params: { name, arguments: args },
        },
      );
    } else if (roll < 0.85) {
      const content = text(rand, 40 + Math.floor(rand() * 360));
      const structured = rand() < 0.3 ? { size: Math.floor(rand() * 1e5), lines: Math.floor(rand() * 900) } : undefined;
      size = add(reply(id, content, structured), mcpReply(id, content, structured));
      id++;
    } else {
      const content = text(rand, 30 + Math.floor(rand() * 170));
      const level = rand() < 0.7 ? "info" : "debug";
      size = add(
        { type: "log", level, content },
        {
          jsonrpc: "2.0",
          method: "notifications/message",
          params: { level, data: content },
        },
      );
    }
    sinceBig += size;
  }
  return {
    ears: Buffer.from(`${ears.join("\n")}\n`),
    mcp: Buffer.from(`${mcp.join("\n")}\n`),
    frames: ears.length,
    bigFrames: big,
  };
}

function reply(id, content, structured) {
  const outcome = structured === undefined ? { status: "success", content } : { status: "success", content, structured };
  return { type: "reply", id, outcome };
}

function mcpReply(id, content, structured) {
  const result = { content: [{ type: "text", text: content }] };
  if (structured !== undefined) result.structuredContent = structured;
  return { jsonrpc: "2.0", id, result };
}

/**
 * One long reply frame of about `bytes` bytes: half tool text, half structured records. Returns the
 * protocol 1 line and the equivalent MCP JSON-RPC line (both without the newline).
 */
export function longFrame(bytes, seed = 2) {
  const rand = random(seed);
  const content = text(rand, Math.floor(bytes / 2));
  const structured = { records: records(rand, Math.floor(bytes / 2) - 120) };
  return {
    ears: JSON.stringify(reply(1, content, structured)),
    mcp: JSON.stringify(mcpReply(1, content, structured)),
  };
}

/** Cuts a buffer into views of `size` bytes (no copies). */
export function chunks(buffer, size) {
  const list = [];
  for (let at = 0; at < buffer.length; at += size) list.push(buffer.subarray(at, Math.min(at + size, buffer.length)));
  return list;
}

/**
 * The large-payload value: `{ records }` whose JSON text is about `bytes` long. Built in 4 MB batches
 * with `collect()` (a full GC) between them, so the builder's garbage does not set the peak RSS that
 * the scenario measures.
 */
export function largeValue(bytes, collect = () => {}, seed = 4) {
  const rand = random(seed);
  const list = [];
  for (let left = bytes - 14; left > 0; left -= 4e6) {
    for (const record of records(rand, Math.min(left, 4e6))) list.push(record);
    collect();
  }
  return { records: list };
}
