// Scenario 10 (issue 33): ears among the code-mode peers. The same three bodies (one host call, ten calls, a
// small compute; bench/lib/peers-table.mjs) run through ears (cold sandboxed, cold unconfined, pooled
// sandboxed), isolated-vm (a fresh isolate per body), quickjs-emscripten (a fresh WebAssembly runtime per body),
// a Deno subprocess with no permissions, Anthropic's sandbox-runtime around Node, a bare `spawn(node)` with a line
// protocol, and `node:vm` (a fresh context in this process: the floor), interleaved in one process in a shuffled
// order every repetition, after a short pause each. Per system and body: the median and p90 from the call to the
// result at the host, and to the end where the caller waits for one (ears' report; a subprocess's exit); the µs
// per call in a fresh runner; and a one-line isolation summary from a probe body each system runs once (what it
// could read, connect to, see and start; bench/lib/peers-table.mjs). Child processes run without
// NODE_EXTRA_CA_CERTS (it costs every Node child that inherits it about 50 ms here); the setup says whether this
// process had it. The peers' packages are installed on first use (bench/lib/peers-install.mjs); a peer that
// cannot be had is a row saying why. BENCH_PEERS_REPS overrides the repetitions per round.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createContext, Script } from "node:vm";
import { createRunPool, runCode } from "@posoco/ears/host";
import { gc } from "../lib/measure.mjs";
import { random } from "../lib/payloads.mjs";
import { summarize } from "../lib/stats.mjs";
import { installPeers, PEERS_DIR, sandboxRuntimeTools } from "../lib/peers-install.mjs";
import { BODIES, isolationSummary, peersTable, perCallMicros, probeBody, PROBE_ENV, quantile } from "../lib/peers-table.mjs";

/** The pause before every timed run, for every system alike: a pool's replacement and a child's leftovers settle in it. */
const PAUSE_MS = 50;
/** A run that takes longer is stopped and fails the scenario (a peer that hangs must not hang the benchmark). */
const RUN_DEADLINE_MS = 20_000;
const LINE_RUNNER = fileURLToPath(new URL("../children/peer-line-runner.mjs", import.meta.url));
const add = ({ a, b }) => ({ sum: a + b });

const EARS_PRELUDE =
  "const hostFn = ears.call;\n" +
  'const add = async (a, b) => { const r = await ears.call("add", { a, b }); ' +
  'if (r.status === "failure") throw new Error(String(r.content)); return r.structured.sum; };\n';
const TOOLS_PRELUDE = "const hostFn = tools.add;\nconst add = async (a, b) => (await tools.add({ a, b })).sum;\n";

function shuffled(list, next) {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

function withDeadline(promise, what, onTimeout) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => {
      onTimeout?.();
      reject(new Error(`peers: ${what} took over ${RUN_DEADLINE_MS} ms`));
    }, RUN_DEADLINE_MS);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

async function peerModule(name) {
  const require = createRequire(join(PEERS_DIR, "package.json"));
  const module = await import(pathToFileURL(require.resolve(name)).href);
  return module.default ?? module;
}

/** The host's `add` for an in-process run, noting when the body first called it (ms from `start`). */
function firstCall(start) {
  const host = {
    ms: undefined,
    add(args) {
      host.ms ??= performance.now() - start;
      return add(args);
    },
  };
  return host;
}

/** ears: runCode, cold or pooled; the result at the guest's result frame, the end at the report. */
function earsSystem(name, options, makePool) {
  let pool;
  return {
    name,
    async setup() {
      if (makePool !== undefined) {
        pool = makePool();
        await this.run(BODIES.one.code);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    },
    async run(code) {
      const start = performance.now();
      let resultMs;
      let firstCallMs;
      const onFrame = (direction, line) => {
        if (direction !== "guest") return;
        if (firstCallMs === undefined && line.includes('"type":"request"')) firstCallMs = performance.now() - start;
        if (resultMs === undefined && line.includes('"type":"result"')) resultMs = performance.now() - start;
      };
      const report = await runCode({ code: EARS_PRELUDE + code, capabilities: { add }, onFrame, ...options, ...(pool && { pool }) });
      const endMs = performance.now() - start;
      if (!report.ok || resultMs === undefined)
        throw new Error(`peers: ${name} failed: ${report.failure?.message ?? JSON.stringify(report.outcome)}`);
      return { resultMs, endMs, firstCallMs, value: report.outcome.structured };
    },
    close: () => pool?.close(),
  };
}

/** A child speaking the line protocol of bench/children/peer-line-runner.mjs; `start` spawns it. */
function lineSystem(name, prepare) {
  let start;
  return {
    name,
    async setup() {
      start = await prepare();
    },
    async run(code) {
      const t0 = performance.now();
      const child = await start();
      const exited = once(child, "exit");
      exited.catch(() => {});
      child.stdin.on("error", () => {});
      child.stdin.write(`${JSON.stringify({ body: TOOLS_PRELUDE + code })}\n`);
      let resultMs;
      let firstCallMs;
      let value;
      let failure;
      let stderr = "";
      child.stderr.on("data", (chunk) => (stderr += chunk));
      let buffered = "";
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (text) => {
        buffered += text;
        let end;
        while ((end = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, end);
          buffered = buffered.slice(end + 1);
          let message;
          try {
            message = JSON.parse(line);
          } catch {
            continue; // a sandbox's own chatter
          }
          if (message.call !== undefined) firstCallMs ??= performance.now() - t0;
          if (message.call !== undefined) child.stdin.write(`${JSON.stringify({ reply: message.call, value: add(message.args) })}\n`);
          else if ("result" in message || "error" in message) {
            resultMs ??= performance.now() - t0;
            value = message.result;
            failure = message.error;
          }
        }
      });
      await withDeadline(exited, name, () => child.kill("SIGKILL"));
      const endMs = performance.now() - t0;
      if (resultMs === undefined || failure !== undefined)
        throw new Error(`peers: ${name} failed: ${failure ?? "no result"} ${stderr.slice(-500)}`);
      return { resultMs, endMs, firstCallMs, value };
    },
  };
}

/** isolated-vm: a fresh isolate and context per body, `tools.add` a synchronous call into this isolate. */
function isolatedVm() {
  let ivm;
  return {
    name: "isolated-vm (fresh isolate)",
    async setup() {
      ivm = await peerModule("isolated-vm");
    },
    async run(code) {
      const start = performance.now();
      const host = firstCall(start);
      const isolate = new ivm.Isolate({ memoryLimit: 64 });
      try {
        const context = await isolate.createContext();
        const hostAdd = new ivm.Reference(host.add);
        const script =
          "const tools = { add: (args) => $0.applySync(undefined, [args], { arguments: { copy: true }, result: { copy: true } }) };\n" +
          `return (async () => {${TOOLS_PRELUDE}${code}\n})();`;
        // A Reference is transferable as it is ($0 in the isolate); { reference: true } would wrap it once more.
        const value = await context.evalClosure(script, [hostAdd], {
          result: { promise: true, copy: true },
          timeout: RUN_DEADLINE_MS,
        });
        const resultMs = performance.now() - start;
        context.release();
        hostAdd.release();
        return { resultMs, firstCallMs: host.ms, value };
      } finally {
        isolate.dispose();
      }
    },
  };
}

/** quickjs-emscripten: the WebAssembly module loaded once, a fresh runtime and context per body. */
function quickjs() {
  let QuickJS;
  return {
    name: "quickjs-emscripten (fresh runtime)",
    async setup() {
      QuickJS = await (await peerModule("quickjs-emscripten")).getQuickJS();
    },
    async run(code) {
      const start = performance.now();
      const host = firstCall(start);
      const runtime = QuickJS.newRuntime();
      runtime.setMemoryLimit(64 * 1024 * 1024);
      const deadline = Date.now() + RUN_DEADLINE_MS;
      runtime.setInterruptHandler(() => Date.now() > deadline);
      const vm = runtime.newContext();
      try {
        const hostAdd = vm.newFunction("__add", (text) => vm.newString(JSON.stringify(host.add(JSON.parse(vm.getString(text))))));
        vm.setProp(vm.global, "__add", hostAdd);
        hostAdd.dispose();
        const script =
          "const tools = { add: (args) => JSON.parse(__add(JSON.stringify(args))) };\n" +
          `(async () => {${TOOLS_PRELUDE}${code}\n})().then((v) => JSON.stringify(v))`;
        const promise = vm.unwrapResult(vm.evalCode(script));
        runtime.executePendingJobs();
        const state = vm.getPromiseState(promise);
        promise.dispose();
        if (state.type !== "fulfilled") {
          const why = state.type === "rejected" ? vm.dump(state.error) : "pending";
          state.error?.dispose();
          throw new Error(`peers: quickjs failed: ${JSON.stringify(why)}`);
        }
        const value = JSON.parse(vm.getString(state.value));
        state.value.dispose();
        return { resultMs: performance.now() - start, firstCallMs: host.ms, value };
      } finally {
        vm.dispose();
        runtime.dispose();
      }
    },
  };
}

/** node:vm: a fresh context in this process, `tools` the host's own object: no boundary at all, the floor. */
function nodeVm() {
  return {
    name: "node:vm (fresh context, in-process floor)",
    async run(code) {
      const start = performance.now();
      const host = firstCall(start);
      const context = createContext({ tools: { add: host.add } });
      const value = await new Script(`(async () => {${TOOLS_PRELUDE}${code}\n})()`).runInContext(context);
      return { resultMs: performance.now() - start, firstCallMs: host.ms, value: JSON.parse(JSON.stringify(value)) };
    },
  };
}

/** The systems, each with its `setup` (which may throw: the row then says why) and `run(code)`. */
function systems(childEnv, scratch) {
  const sandboxedEnv = childEnv;
  const spawnLine =
    (command, args, options = {}) =>
    () =>
      spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], env: childEnv, cwd: scratch, ...options });
  let srt;
  const sandboxRuntime = lineSystem("sandbox-runtime around node (bubblewrap)", async () => {
    const missing = sandboxRuntimeTools();
    if (missing !== undefined) throw new Error(missing);
    ({ SandboxManager: srt } = await peerModule("@anthropic-ai/sandbox-runtime"));
    // Its defaults: no network (every domain denied), reads allowed, writes to the working directory only.
    await srt.initialize({
      network: { allowedDomains: [], deniedDomains: [] },
      filesystem: { denyRead: [], allowWrite: [], denyWrite: [] },
    });
    return async () => {
      const wrapped = await srt.wrapWithSandbox(`${JSON.stringify(process.execPath)} ${JSON.stringify(LINE_RUNNER)}`);
      return spawn(wrapped, { shell: true, stdio: ["pipe", "pipe", "pipe"], env: childEnv, cwd: scratch });
    };
  });
  sandboxRuntime.close = () => srt?.reset();
  return [
    earsSystem("ears cold, sandboxed", { env: sandboxedEnv }),
    earsSystem("ears cold, sandbox: false", { env: childEnv, sandbox: false }),
    earsSystem("ears pooled (pool of 2), sandboxed", {}, () => createRunPool({ size: 2, env: sandboxedEnv })),
    isolatedVm(),
    quickjs(),
    lineSystem("deno subprocess, no permissions", async () => {
      const deno = process.env.EARS_DENO ?? fileURLToPath(new URL("../../node_modules/.bin/deno", import.meta.url));
      return spawnLine(deno, ["run", "--no-prompt", "--no-config", LINE_RUNNER], { env: { ...childEnv, DENO_NO_UPDATE_CHECK: "1" } });
    }),
    sandboxRuntime,
    lineSystem("bare spawn(node), line protocol", async () => spawnLine(process.execPath, [LINE_RUNNER])),
    nodeVm(),
  ];
}

async function timedRun(system, id) {
  await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
  gc();
  const sample = await withDeadline(system.run(BODIES[id].code), `${system.name} (${id})`);
  if (JSON.stringify(sample.value) !== JSON.stringify(BODIES[id].expect)) {
    throw new Error(`peers: ${system.name} returned ${JSON.stringify(sample.value)} for ${id}, not ${BODIES[id].expect}`);
  }
  return {
    resultMs: sample.resultMs,
    ...(sample.endMs !== undefined && { endMs: sample.endMs }),
    ...(sample.firstCallMs !== undefined && { firstCallMs: sample.firstCallMs }),
  };
}

export async function peers({ quick }) {
  const repetitions = Number(process.env.BENCH_PEERS_REPS ?? (quick ? 4 : 40));
  const rounds = 2;
  const seed = Number(process.env.BENCH_PEERS_SEED ?? Date.now() % 2 ** 31);
  const next = random(seed);
  const installFailure = installPeers();
  const token = `probe-${process.pid}-${seed}`;
  const scratch = mkdtempSync(join(tmpdir(), "ears-peers-"));
  const hostFile = join(scratch, "host-file.txt");
  writeFileSync(hostFile, token);
  const childEnv = { ...process.env, [PROBE_ENV]: token };
  // As the figures were taken: Node children without the machine's extra CA file.
  delete childEnv.NODE_EXTRA_CA_CERTS;
  const previousProbe = process.env[PROBE_ENV];
  process.env[PROBE_ENV] = token;
  const listener = createServer((socket) => socket.destroy());
  listener.listen(0, "127.0.0.1");
  await once(listener, "listening");
  const port = listener.address().port;
  const all = systems(childEnv, scratch);
  const live = [];
  const state = new Map();
  try {
    for (const system of all) {
      const needsPackages =
        system.name.startsWith("isolated-vm") || system.name.startsWith("quickjs") || system.name.startsWith("sandbox-runtime");
      try {
        if (needsPackages && installFailure !== undefined) throw new Error(installFailure);
        await system.setup?.();
        for (const id of Object.keys(BODIES)) await timedRun(system, id);
        let isolation;
        try {
          const probe = await withDeadline(system.run(probeBody({ hostFile, token, port })), `${system.name} (probe)`);
          isolation = isolationSummary(probe.value);
        } catch (error) {
          isolation = isolationSummary(undefined, error.message);
        }
        state.set(system.name, { isolation });
        live.push(system);
      } catch (error) {
        process.stderr.write(`peers: ${system.name} left out: ${error.message}\n`);
        state.set(system.name, { skipped: error.message.split("\n")[0].slice(0, 200), isolation: "not probed" });
      }
    }
    const roundSamples = [];
    for (let round = 0; round < rounds; round++) {
      const samples = new Map(live.map((s) => [s.name, Object.fromEntries(Object.keys(BODIES).map((id) => [id, []]))]));
      const pairs = live.flatMap((system) => Object.keys(BODIES).map((id) => ({ system, id })));
      for (let rep = 0; rep < repetitions; rep++) {
        for (const { system, id } of shuffled(pairs, next)) samples.get(system.name)[id].push(await timedRun(system, id));
      }
      roundSamples.push(samples);
    }
    return report({ all, state, roundSamples, repetitions, rounds, seed, quick });
  } finally {
    for (const system of all) await system.close?.();
    listener.close();
    rmSync(scratch, { recursive: true, force: true });
    if (previousProbe === undefined) delete process.env[PROBE_ENV];
    else process.env[PROBE_ENV] = previousProbe;
  }
}

function report({ all, state, roundSamples, repetitions, rounds, seed }) {
  const view = (samples) =>
    all.map(({ name }) => ({ name, samples: samples.get(name), skipped: state.get(name).skipped, isolation: state.get(name).isolation }));
  const text = [
    `10. Code-mode peers (issue 33): the same bodies through every system, shuffled each repetition; ${repetitions} repetitions a round`,
    "    result = call to the result at the host; end = to ears' report, or to a subprocess's exit",
    ...roundSamples.map((samples, i) => peersTable(`Round ${i + 1} of ${rounds}`, view(samples))),
  ].join("\n");
  const rows = [];
  const median = (samples, system, id, field) =>
    quantile(
      (samples.get(system)?.[id] ?? []).map((s) => s[field]).filter((v) => v !== undefined),
      0.5,
    );
  roundSamples.forEach((samples, i) => {
    for (const [name, byBody] of samples) {
      for (const [id, runs] of Object.entries(byBody)) {
        rows.push({
          contender: `round ${i + 1}: ${name}: ${BODIES[id].label}: call to result`,
          unit: "ms",
          summary: withP90(runs.map((r) => r.resultMs)),
        });
        const ends = runs.map((r) => r.endMs).filter((v) => v !== undefined);
        if (ends.length > 0)
          rows.push({ contender: `round ${i + 1}: ${name}: ${BODIES[id].label}: call to end`, unit: "ms", summary: withP90(ends) });
      }
    }
  });
  const targets = [];
  const both = mergeRounds(roundSamples);
  const m = (system, id, field) => median(both, system, id, field);
  const ivm = m("isolated-vm (fresh isolate)", "one", "resultMs");
  const bare = m("bare spawn(node), line protocol", "one", "resultMs");
  const srt = m("sandbox-runtime around node (bubblewrap)", "one", "resultMs");
  const pooled = "ears pooled (pool of 2), sandboxed";
  const cold = "ears cold, sandboxed";
  const target = (name, measured, op, required) => {
    if (Number.isFinite(measured)) targets.push({ target: name, measured, op, required });
  };
  target("pooled call to report / isolated-vm call to result (one call)", m(pooled, "one", "endMs") / ivm, "<=", 2);
  target("pooled call to result frame / isolated-vm call to result (one call)", m(pooled, "one", "resultMs") / ivm, "<=", 1.2);
  target("cold sandboxed call to report / bare spawn call to result (one call)", m(cold, "one", "endMs") / bare, "<=", 1.5);
  target("cold sandboxed call to report / sandbox-runtime call to result (one call)", m(cold, "one", "endMs") / srt, "<", 1);
  const perCall = (system) => perCallMicros(both.get(system)?.ten);
  target(
    "per call in a fresh runner: ears cold sandboxed / bare line protocol",
    perCall(cold) / perCall("bare spawn(node), line protocol"),
    "<=",
    1.2,
  );
  return {
    id: "peers",
    title: "10. Code-mode peers (issue 33)",
    text,
    setup: {
      repetitions,
      rounds,
      seed,
      pauseMs: PAUSE_MS,
      bodies: BODIES,
      nodeExtraCaCertsInHost: process.env.NODE_EXTRA_CA_CERTS !== undefined,
      nodeExtraCaCertsInChildren: false,
      systems: Object.fromEntries(all.map(({ name }) => [name, state.get(name)])),
    },
    rows,
    targets,
    context: Object.fromEntries(
      all.map(({ name }) => [`µs per call in a fresh runner: ${name}`, perCall(name)]).filter(([, v]) => v !== undefined),
    ),
  };
}

function withP90(samples) {
  return { ...summarize(samples), p90: quantile(samples, 0.9) };
}

function mergeRounds(roundSamples) {
  const merged = new Map();
  for (const samples of roundSamples) {
    for (const [name, byBody] of samples) {
      const into = merged.get(name) ?? Object.fromEntries(Object.keys(byBody).map((id) => [id, []]));
      for (const [id, runs] of Object.entries(byBody)) into[id].push(...runs);
      merged.set(name, into);
    }
  }
  return merged;
}
