/** The help texts of `ears`: complete enough to use the CLI without the docs. */
import { DEFAULT_POOL_SIZE } from "../host/code/run-pool.js";
import { MCP_RUN_TIMEOUT_MS } from "./mcp-admission.js";

const EXIT_STATUS = `Exit status:
  0   the guest's result is a success (replay: the guest did what the recording says)
  1   the guest's result is a failure outcome (replay: the guest diverged from the recording)
  2   the session broke: protocol error, crash, no result, timeout, the command could not start,
      no sandbox although one was required, a resource limit reached (MemoryLimit, ProcessLimit, CpuLimit) or
      not enforceable here, interrupted (Ctrl-C), the transcript could not be written, or (exec)
      the code body does not compile (CompileError)
  64  usage error: unknown option, bad --input, missing command, unreadable file`;

/** The connector options, shared by run, exec, declarations and mcp. */
const CONNECTOR_HELP = `  --mcp-config <file>       An MCP client configuration ({"mcpServers": {"name": {"command", "args",
                            "env"} | {"url", "headers"}}}): every tool of every server becomes a
                            capability named <server>.<tool>, allowed by default. Servers start
                            once, their stderr goes to ears' stderr as "[mcp <server>] line".
  --fetch-allow <origin>    Add the capability fetch ({url, method?, headers?, body?} ->
                            {status, headers, body}) for this origin (scheme://host[:port]);
                            repeatable; allowed by default. Private, loopback and metadata
                            addresses are refused unless the origin names the address itself.
  --fetch-header '<origin>=<Name>: <value>'
                            A header ears adds to fetch requests to <origin> only; \${VAR} in the
                            value is read from ears' environment (single-quote it), and the body
                            never sees it. Repeatable.`;

/** --files-dir, for the commands that run bodies or guests (run, exec, mcp). */
const FILES_DIR_HELP = `  --files-dir <dir>         Where images and other files MCP tools send are saved (created if
                            missing); a result names each one's path. Default: a fresh directory
                            under the OS temporary directory, named on stderr after the run when
                            it holds files. ears never deletes a file it saved: a printed path
                            still exists after ears exits.`;

/** --workspace-size, for ears exec --workspace and ears mcp's sessions. */
const WORKSPACE_SIZE_HELP = `  --workspace-size <size>   The workspace's bound (default 256M, at least 1M; and 10,000 files
                            and directories): past it a write fails with ENOSPC inside the body.`;

/** `ears --help`. */
export const MAIN_HELP = `ears - run, record and replay @posoco/ears guest programs (protocol 1 over stdio)

Usage:
  ears run [options] -- <command> [args...]
      Run a guest program as a child process under a local host.
  ears exec --code '<body>' | --code-file <path> [options]
      Run a code body (TypeScript or JavaScript; ears and input in scope) as a guest.
  ears replay <transcript.ndjson> [options] -- <command> [args...]
      Replay a recorded session against a guest and report the first divergence.
  ears timeline <transcript.ndjson> [-o run.html]
      Turn a recorded run into one self-contained HTML page: the calls on a time axis.
  ears doctor [--json]
      Say what confinement a run gets on this machine, and how to fix what is missing.
  ears declarations [--mcp-config <file>] [--capabilities <module>] [--fetch-allow <origin>]
      Print the TypeScript declarations of what a code body may call (for a model's prompt).
  ears mcp [--mcp-config <file>] [--capabilities <module>] [--fetch-allow <origin>] [options]
      Be an MCP server (stdio) with one tool, run_code, that runs a code body sandboxed.
  ears runner [--no-sandbox] [-- <command> [args...]]
      Be a remote runner: run one code body (or guest) sandboxed here for a host on another machine.
  ears --help, ears <command> --help
  ears --version          (also -v, -V)

A guest is a program that calls serve() from @posoco/ears. The host sends it an input and the names
of the capabilities it may call, answers its calls, streams its logs to stderr, and prints its result.

${EXIT_STATUS}

Examples:
  ears run --allow read,list -- node guest.mjs
  ears run --allow read --record run.ndjson -- node guest.mjs
  ears replay run.ndjson -- node guest.mjs
  ears timeline run.ndjson -o run.html

Run "ears run --help", "ears exec --help", "ears replay --help", "ears timeline --help", "ears doctor --help",
"ears declarations --help", "ears mcp --help" or "ears runner --help" for the options.
`;

/** `ears run --help`. */
export const RUN_HELP = `Usage: ears run [options] -- <command> [args...]

Starts <command> (no shell) as a guest child process, speaks protocol 1 with it over its stdin and
stdout, answers its capability calls, streams its logs to stderr as "[level] content" while it runs,
and prints its result at the end: the content, then the structured value as pretty JSON (stdout).

Options:
  --allow <names>           Capabilities the guest may call, comma-separated; repeatable.
                            Default: none (every call is answered CapabilityDenied).
  --approve <names>         Allowed capabilities whose every call needs approval, comma-separated;
                            repeatable. Each such call (and one a --capabilities handler marks
                            with requireApproval) is asked on the terminal: ears writes the name
                            and the arguments (control characters escaped, cut at 2000
                            characters) on stderr and reads y/N from its stdin; anything but
                            y or yes denies it (ApprovalDenied, "denied at the terminal"), and
                            its handler does not run. When stdin or stderr is not a terminal,
                            every such call is denied, saying so. Decisions wait up to 10 minutes
                            and do not count against --timeout; --json's report lists them.
  --input <json>|@<file>    The guest's input: JSON text, or @file to read JSON from a file.
                            Default: null.
  --capabilities <module>   A JavaScript module of capability handlers: named function exports,
                            or a default export object of name -> handler. A handler gets
                            (args, { name, id, signal }) and returns an Outcome, a string, or JSON.
                            Merged over the built-ins (a module's "read" replaces the built-in).
  --root <dir>              The directory the built-in read and list are confined to.
                            Default: the working directory.
${CONNECTOR_HELP}
${FILES_DIR_HELP}
  --sandbox                 Require an OS sandbox; without one the guest is not started
                            (SandboxUnavailable, exit 2). Default on Linux as well (bubblewrap
                            where it starts, else Landlock); elsewhere the default runs unconfined
                            with a one-line note on stderr.
  --no-sandbox              Run the guest unconfined, with your rights (no note).
  --sandbox-read <path>     Let the sandboxed guest read this file or directory; repeatable.
  --sandbox-write <path>    Let the sandboxed guest read and write this path; repeatable.
  --sandbox-show-secrets    Show .env*, .npmrc, .git/, .ssh/, *.pem, *.key and the like in the
                            directories the guest sees (default: masked, they cannot be read).
  --sandbox-allow-broad     Allow /, a home directory or the temporary directory's root as the
                            working directory or a sandbox path (default: refused).
  --sandbox-mechanism <m>   bubblewrap, landlock or auto (the default: bubblewrap where it starts,
                            else Landlock, Linux 6.12+). A mechanism that cannot start here refuses
                            the run.
  --env NAME | NAME=value   Pass this environment variable (the host's value, or the one given)
                            into the sandbox; repeatable. The sandbox has only PATH, HOME (an
                            empty private directory), LANG, PWD and TZ besides these.
                            --sandbox-read, --sandbox-write, the three above and --env imply
                            --sandbox.
  --record <file>           Write every frame, both directions, to an NDJSON transcript
                            ({"from":"guest"|"host","at":ms,"frame":{...}} a line), with the guest's
                            stderr and the report as notes, for "ears replay" and "ears timeline".
                            Created private (mode 0600); a symbolic link there is refused.
  --timeout <seconds>       Deadline for the whole run; past it the guest is stopped (exit 2).
                            Default: none.
  --call-timeout <seconds>  Deadline for each capability call; a late call is answered with a
                            CallTimedOut failure. Default: 120.
  --memory <n>[K|M|G]       Memory of the guest and everything it starts (K, M, G: powers of
                            1024; at least 16M); past it the guest is killed: MemoryLimit, exit 2.
                            Default: 1G.
  --processes <n>           Processes and threads of the guest tree at once; beyond it fork and
                            spawn fail inside the guest (EAGAIN) and the run goes on. Default: 256.
  --cpu-time <seconds>      CPU time of the guest tree; past it the run ends: CpuLimit, exit 2.
                            Default: none (the --timeout deadline only).
  --tmp-size <n>[K|M|G]     Size of the sandbox's private /tmp; writes past it fail with ENOSPC
                            inside the guest. Sandboxed runs only. At least 64K. Default: 256M.
                            A limit given here that this machine cannot enforce (no cgroup; no
                            sandbox for --tmp-size) stops the run before it starts (exit 2). After
                            the run, a note says what it cost: cpu 120 ms, memory 48 MiB peak,
                            3 processes, 27 threads (--json: the report's "limits" and "usage").
  --json                    Print the whole run report (outcome, failure, logs, calls, exit,
                            stderr tail, limits, usage) as one JSON line on stdout instead of the result.
  --quiet                   Do not stream logs or the guest's stderr, nor write notes, to stderr
                            (errors still appear, and the guest's stderr tail after a broken run).
  --verbose                 After the run, print a compact timeline on stderr: each call with its
                            start, duration, outcome and failure code, the logs in place, the result.
  -h, --help                Show this help.

The sandbox (Linux, bubblewrap): the guest sees the system directories needed to start the command,
the working directory and its script's directory (read-only, secrets masked), a private /tmp, the
paths given above, no network, no host process, no kernel setting to change, no setuid bit to set,
no descriptor but stdin, stdout and stderr, and dies with ears. Capabilities still run outside it,
in ears. "ears doctor" says what confinement this machine gives and how to fix what is missing.

Built-in capabilities (allow them with --allow):
  read  {"path": "notes/a.txt"}  the UTF-8 text of a file under the root
  list  {"path": "notes"}        the entries of a directory under the root ({} or null: the root);
                                 content: one name a line, directories ending in "/";
                                 structured: [{"name": ..., "type": "file"|"directory"|"symlink"|"other"}]
  Paths are relative to the root. Absolute paths, ".." leading out of the root and symbolic links
  resolving outside it are refused with a PathOutsideRoot failure; other failures: NotFound,
  NotAFile (directories, named pipes, sockets, devices), NotADirectory, NotUtf8, FileTooLarge
  (over 16 MiB), InvalidArguments, FileSystemError.

${EXIT_STATUS}

Examples:
  ears run --allow read,list -- node guest.mjs
  ears run --allow read --input '{"path":"README.md"}' --root docs -- node guest.mjs
  ears run --capabilities ./caps.mjs --allow search --input @input.json --json -- node guest.mjs
  ears run --allow read --record run.ndjson --timeout 30 -- node guest.mjs
  ears run --sandbox-write out --env API_TOKEN -- node guest.mjs
`;

/** `ears replay --help`. */
export const REPLAY_HELP = `Usage: ears replay <transcript.ndjson> [options] -- <command> [args...]

Replays a transcript written by "ears run --record" (or recordTo() in @posoco/ears/testing) against
<command>: sends the recorded invoke (same allowed names and input), checks every request the guest
makes against the recording (name and arguments, in order), answers it with the recorded reply, and
compares the guest's result with the recorded one. The replay stops at the first divergence and says
where, e.g.: request #3: expected read {"path":"a"} but the guest sent read {"path":"b"}.
Logs are streamed but not compared. On a match the result is printed as "ears run" prints it.

Options:
  --record <file>           Also record the replayed session to a new transcript.
  --timeout <seconds>       Deadline for the whole replay. Default: none.
  --call-timeout <seconds>  Deadline for each call. Default: 120.
  --json                    Print {"ok", "divergence", "matchedRequests", "recordedRequests",
                            "report"} as one JSON line on stdout instead of the result.
  --quiet                   Do not stream logs or the guest's stderr, nor write notes, to stderr
                            (errors still appear, and the guest's stderr tail after a broken run).
  --sandbox, --no-sandbox, --sandbox-read <path>, --sandbox-write <path>, --sandbox-show-secrets,
  --sandbox-allow-broad, --sandbox-mechanism <m>, --env NAME[=value]
                            As for "ears run": the guest runs in an OS sandbox by default.
  -h, --help                Show this help.

Exit status:
  0   the guest made the recorded requests and returned the recorded result
  1   the guest diverged from the recording (the divergence is printed on stderr)
  2   the session broke in a way the recording does not show (crash, timeout, protocol error,
      the command could not start, interrupted), or the transcript could not be written
  64  usage error, or the transcript cannot be read or is not a recording (the line is named)

Examples:
  ears run --allow read --record run.ndjson -- node guest.mjs
  ears replay run.ndjson -- node guest.mjs
`;

/** `ears exec --help`. */
export const EXEC_HELP = `Usage: ears exec --code '<body>' | --code-file <path> [options]

Runs a code body as a guest child process: the body of an async function in TypeScript or
JavaScript, with ears (call, log), input and Outcome in scope. await works at its top level and
return gives the result (an Outcome as it is, any other JSON value as the structured success).
Types are stripped, not checked (unless --typecheck); the line:column of an error is the body's own.
A body that does not compile is not run: CompileError, exit 2.

Options:
  --code <body>             The body itself (quote it for the shell).
  --code-file <path>        Read the body from a file.
  --typecheck               Check the body's types first (needs the typescript package): against
                            the types of --mcp-config's tools and fetch when given; other calls
                            take any name and JSON arguments, as no contract is known for them.
  --cwd <dir>               The body's working directory, shown read-only (secrets masked).
                            Default: a private empty directory, writable, removed after the run.
  --workspace <dir>         A kept workspace as the working directory, writable: the files of <dir>
                            (created if missing) are loaded before the body runs and written back
                            after, so the next exec with the same <dir> sees what this one wrote.
                            <dir> holding a link, a named pipe or a device, or more than
                            --workspace-size, is refused; a link the body makes is not kept, nor a
                            setuid bit. Always sandboxed (not with --no-sandbox), not with --cwd;
                            the workspace is a tmpfs ears mounts, so the host must be root.
${WORKSPACE_SIZE_HELP}
  --no-record-code          Keep the body out of the --record transcript and the --verbose
                            timeline (by default they hold its first 64 Ki characters).
  Every option of "ears run" (--allow, --approve, --input, --capabilities, --root, --sandbox, --no-sandbox,
  --sandbox-read, --sandbox-write, --sandbox-show-secrets, --sandbox-allow-broad, --sandbox-mechanism, --env, --record,
  --timeout, --call-timeout, --memory, --processes, --cpu-time, --tmp-size, --json, --quiet,
  --verbose, --mcp-config, --files-dir, --fetch-allow, --fetch-header), with the same meaning; see
  ears run --help.
  -h, --help                Show this help.

${EXIT_STATUS}

Examples:
  ears exec --allow read --code 'const r = await ears.call("read", { path: "README.md" }); return r.content.length;'
  ears exec --allow read,list --input '{"dir":"."}' --code-file body.ts --json
`;

/** `ears timeline --help`. */
export const TIMELINE_HELP = `Usage: ears timeline <transcript.ndjson> [-o <file.html>]

Turns a transcript written by "ears run --record" into one self-contained HTML page: the calls as
bars on a time axis (name, arguments, duration, outcome, failure code), the logs and the guest's
stderr in place, the result, the session failure and the usage. The page loads nothing (no network,
no external files), has a search box, and can be attached to a bug report. A transcript without
times (recordTo() without { timed: true }) is laid out in frame order.

Options:
  -o, --output <file>       Where to write the page; "-" for stdout. Default: the transcript's
                            name with .html (run.ndjson -> run.html). Created private (mode 0600);
                            a symbolic link there is refused.
  -h, --help                Show this help.

Exit status:
  0   the page was written
  2   the page could not be written
  64  usage error, or the transcript cannot be read (the line is named)

Examples:
  ears run --allow read --record run.ndjson -- node guest.mjs
  ears timeline run.ndjson -o run.html
`;

/** `ears doctor --help`. */
export const DOCTOR_HELP = `Usage: ears doctor [--json]

Says what confinement a guest run gets on this machine and why: the platform, bubblewrap (found, its
version, whether it starts a sandbox), user namespaces, the seccomp filter, the host's user. For each
missing piece it prints the one line that fixes it (e.g. apt-get install bubblewrap, the sysctl for
user namespaces, AppArmor's restriction on Ubuntu 24.04). Then the deployment matrix: for the
environment it detects (Docker, Podman, Kubernetes, another container, a host), each guarantee (file
system, network, host sockets, signals and /proc, memory, processes, CPU, /tmp, sessions) with the
mechanism that gives it (bubblewrap, landlock, cgroup v1/v2, rlimit, watchdog, none) and the fix for
this environment where one is missing. Then the resource limits (--memory, --processes, --cpu-time,
--tmp-size): what enforces each here. The exit status is about confinement only.

Options:
  --json                    Print {"confined": true|false, "checks": [{name, ok, detail, fix?}],
                            "limits": {cgroup, limits: {memoryBytes: {enforcedBy, note?, fix?}, ...}},
                            "environment": "docker"|"podman"|"kubernetes"|"container"|"host",
                            "matrix": [{guarantee, mechanism, ok, detail, fix?}]}.
  -h, --help                Show this help.

Exit status: 0 when runs here are confined, 1 when they are not, 64 for a usage error.
`;

/** `ears runner --help`. */
export const RUNNER_HELP = `Usage: ears runner [--no-sandbox] [-- <command> [args...]]

The far end of a remote runner: a host on another machine starts it over a stream (ssh -T, kubectl
exec -i, docker exec -i) with createRunPool({ remote }), runCode({ remote }) or runGuest({ remote }).
It runs one code body (with -- <command>, that guest program instead) under THIS machine's sandbox
(bubblewrap, seccomp) and resource limits, exactly as a local run here would, relays the guest's
stdin and stdout on its own, its stderr on its own stderr, and tells the host what confined the guest
and what it used. The host keeps the capabilities: every call is answered there. When its stdin
ends (the host is done, or the connection is gone) the guest is stopped and the runner exits.
The lines it exchanges with the host are in wire/PROTOCOL.md, "Remote runners"; see docs/remote.md.

Options:
  --no-sandbox              Allow the host to run the guest unconfined (sandbox: false, or "auto" on a
                            machine without bubblewrap). Without it every run is confined, and a run
                            that cannot be is refused: the host's "auto" is no such permission.
  -h, --help                Show this help.

Exit status: 0 once the guest ran and its end was reported, 1 when the run was refused (the host's
report says why), 64 for a usage error.
`;

/** `ears declarations --help`. */
export const DECLARATIONS_HELP = `Usage: ears declarations [options]

Prints the TypeScript declarations (ears, input, Outcome and the Capabilities map) of exactly what a
code body run by "ears exec" or "ears mcp" with the same options may call: MCP tools and fetch typed
from their JSON Schemas (descriptions as doc comments; what cannot be typed is Json with a comment),
other capabilities untyped. Put the output in a model's prompt.

Options:
  --allow <names>           Also declare these capabilities (built-ins or --capabilities); repeatable.
  --capabilities <module>   A module of capability handlers (see ears run --help).
  --root <dir>              As for ears run.
${CONNECTOR_HELP}
  --quiet                   Do not copy the MCP servers' stderr to stderr.
  -h, --help                Show this help.

Exit status: 0 printed; 64 usage error (a bad option, an unreadable configuration, a server that
cannot be reached).

Examples:
  ears declarations --mcp-config mcp.json
  ears declarations --fetch-allow https://api.github.com --allow read
`;

/** `ears mcp --help`. */
export const MCP_HELP = `Usage: ears mcp [options]

Serves MCP over stdin and stdout (stdio transport) with one tool, run_code: its input is
{"code": "<body>", "input"?: <JSON>}, its description carries the declarations of what the body may
call, the fetch origins and the run's limits, and its result is the body's outcome as one text, with
isError for a failure. A body that does not compile comes back as "CompileError: ... code.ts:LINE:COLUMN: ...".
Bodies run sandboxed, always: without a sandbox that can start here (Linux: bubblewrap) each body is
refused (SandboxUnavailable) unless ears was started with --no-sandbox, and then every result says
that the body ran unconfined. One process each, on runners started ahead (a run pool) so a body does
not wait for a process to start; the MCP servers of --mcp-config are started once and stay connected
until the client closes stdin. Logs, the bodies' stderr and the servers' stderr go to stderr; stdout
carries only MCP.

Options:
${CONNECTOR_HELP}
${FILES_DIR_HELP}
  --allow, --capabilities, --root, --sandbox, --no-sandbox, --sandbox-read, --sandbox-write,
  --sandbox-show-secrets, --sandbox-allow-broad, --sandbox-mechanism, --env, --timeout, --call-timeout, --memory,
  --processes, --cpu-time, --tmp-size, --quiet
                            As for ears run, for every body (sizes with K, M or G; --memory at
                            least 16M, default 1G). --timeout is ${MCP_RUN_TIMEOUT_MS / 1000} seconds by default
                            here (a body that never ends would hold a run slot for good), under
                            an MCP client's usual 60 s request timeout; a longer one needs a client
                            that waits as long. Each body works in the session's workspace
                            (below). --sandbox is the default here.
  --approve <names>         Allowed capabilities whose every call needs approval. When the client
                            declared elicitation, ears asks it (elicitation/create, a boolean
                            "approve" field): accepted with approve true runs the call, anything
                            else denies it. Otherwise run_code answers with the pause (a signed
                            token and the pending calls) and a second tool, resume_code
                            {"token", "decisions": {"<id>": {"approved": true|false, "reason"?}}},
                            goes on; the token's key is random per ears mcp process.
  --typecheck               Check each body's types against the declarations before running it
                            (needs the typescript package).
  --pool <n>                Runners kept started ahead, each sandboxed and waiting for one body
                            (default ${DEFAULT_POOL_SIZE}; 0: start a runner for each body instead);
                            at most --max-runs.
  --max-runs <n>            Most bodies running at once, warm runners included (default 4 per core,
                            at most one per GiB of half the memory, at least 2). Calls beyond wait,
                            64 at most, up to 60 s each; past that a call fails RunQueueFull or
                            QueueTimeout and nothing ran (the model is told it may try again).
  --max-result <size>       Largest result passed on (default 1M, at least 1K, at most 4M): a larger
                            one is a ResultTooLarge failure telling the body to return less.
  --session-dir <dir>       The session's workspace is <dir>, kept: opened when it exists (its files
                            loaded), created when not, and written back after every call, so a
                            later ears mcp with the same <dir> goes on from it. Refused when <dir>
                            holds a link, a named pipe or a device, or more than --workspace-size.
${WORKSPACE_SIZE_HELP}
  --no-session              No session: each body works in a private empty directory, removed
                            after it; calls run at once; no resources are served.
  -h, --help                Show this help.

Sessions: one per connection (one ears mcp process), by default. Every body works in the same
workspace (a tmpfs ears mounts, --workspace-size), so a call reads what an earlier one wrote, as in
a notebook; the calls run one at a time (64 waiting at most, then RunQueueFull). A result hands a
file back by holding its relative path as a string ("chart.png"): an image (PNG, JPEG, GIF, WebP,
told by its bytes) comes back as MCP image content while it fits --max-result with the text, any
other file (or an image that does not fit) as a resource link, ears-workspace:///<path>, which
resources/read serves (at most 4M) and resources/list lists. Without a root host (no tmpfs can be
mounted) or with --no-sandbox there is no session, and stderr says so.

In an MCP client's configuration (Claude Desktop's claude_desktop_config.json, Cursor's mcp.json),
naming the package, so that npx never runs an unscoped "ears" from the registry, whatever the
directory the client starts it in:
  {"mcpServers": {"ears": {"command": "npx", "args": ["-y", "--package=@posoco/ears",
    "--package=@modelcontextprotocol/sdk@^1.32.2", "--package=amaro@^1.2.1", "ears", "mcp",
    "--mcp-config", "/abs/mcp.json"]}}}
or the absolute path of an installed CLI: {"command": "/abs/node_modules/.bin/ears", "args": ["mcp", ...]}.

Exit status: 0 when the client ended the session (closed stdin or stdout, or stopped ears with a
signal); 2 when ears ended it (reading or writing failed); 64 usage error. Either way it says so on
stderr.
`;
