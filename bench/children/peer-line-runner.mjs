// The bare peers' runner (bench/scenarios/peers.mjs): the least a body runner in a child process can be, for
// `node` (bare, and inside Anthropic's sandbox-runtime) and for `deno run` with no permissions. One line in,
// `{"body":"..."}`: the body of an async function with `tools` in scope; each `tools.add(args)` writes
// `{"call":N,"args":...}` and waits for `{"reply":N,"value":...}`; the return value goes out as
// `{"result":...}` (a throw as `{"error":"..."}`), then the process exits. No validation, no limits, no hello.
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const write = globalThis.Deno
  ? (line) => globalThis.Deno.stdout.writeSync(encoder.encode(`${line}\n`))
  : (line) => process.stdout.write(`${line}\n`);
const pending = new Map();
let calls = 0;
let buffered = "";
let started = false;

const tools = {
  add(args) {
    const id = ++calls;
    write(JSON.stringify({ call: id, args }));
    return new Promise((resolve) => pending.set(id, resolve));
  },
};

async function runBody(source) {
  const AsyncFunction = (async () => {}).constructor;
  let result;
  try {
    result = { result: await new AsyncFunction("tools", source)(tools) };
  } catch (error) {
    result = { error: String(error?.stack ?? error) };
  }
  write(JSON.stringify(result));
  if (globalThis.Deno) globalThis.Deno.exit(0);
  else process.exit(0);
}

function onLine(line) {
  const message = JSON.parse(line);
  if (!started && typeof message.body === "string") {
    started = true;
    void runBody(message.body);
  } else if (message.reply !== undefined) {
    pending.get(message.reply)?.(message.value);
    pending.delete(message.reply);
  }
}

function onText(text) {
  buffered += text;
  let end;
  while ((end = buffered.indexOf("\n")) >= 0) {
    const line = buffered.slice(0, end);
    buffered = buffered.slice(end + 1);
    if (line !== "") onLine(line);
  }
}

if (globalThis.Deno) {
  for await (const chunk of globalThis.Deno.stdin.readable) onText(decoder.decode(chunk, { stream: true }));
} else {
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", onText);
}
