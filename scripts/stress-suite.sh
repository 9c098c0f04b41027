#!/usr/bin/env bash
# Runs the suite the way a busy CI machine or a contributor's /root checkout would: from a clone under a
# private (0700) directory made by mktemp -d, pinned to one CPU (taskset -c 0), while a busy loop keeps every
# CPU busy (stress-ng --cpu, or one `node` spinning per CPU when stress-ng is missing). vitest runs one file per
# CPU it may use (vitest.config.ts): one file at a time there. A test that depends on
# an ordering it does not make happen, or on the checkout's parents being reachable by another uid, fails
# here. Not part of CI (it takes the machine); CONTRIBUTING.md, "The suite under load".
#
#   bash scripts/stress-suite.sh [--runs N] [--node V] [--cpu N] [--keep-going] [--full] [--no-load] [--keep] [-- vitest args...]
#
#   --runs N       run the suite N times in a row (default 3); stops at the first failing run unless --keep-going
#   --node V       the Node to run on: 24 (the default, as npm test's whole suite), 22.12.0, or current (the `node`
#                  on PATH); from the registry's builds in ~/.cache/ears-node (scripts/install-node.mjs)
#   --cpu N        pin the suite to CPU N, with one busy loop pinned beside it (not one per CPU): the same single
#                  loaded CPU, the others left free for other work (default: CPU 0, a busy loop on every CPU).
#                  Not two runs at once: their fork bombs run as the same uid and share its process limit
#   --full         each run is npm test's steps on that Node (type tests, suite, memory scenarios, lint), not only `vitest run`
#   --no-load      no busy loop (still one CPU, still the 0700 clone)
#   --keep         keep the clone (printed) instead of removing it
#   -- ARGS        passed to vitest (e.g. `-- test/cli/` for a folder)
#
# The clone is of HEAD (commit first); node_modules is hard-linked from this checkout (npm ci would need the
# network, and gives the same tree). Ends with "stress: K of N runs passed"; exit status 0 when all passed.
set -uo pipefail
source_dir="$(cd "$(dirname "$0")/.." && pwd)"
runs=3
node_version=24
keep_going=0
full=0
load=1
keep=0
cpu=""
vitest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="${2:?--runs needs a number}"; shift 2 ;;
    --runs=*) runs="${1#--runs=}"; shift ;;
    --node) node_version="${2:?--node needs a version}"; shift 2 ;;
    --node=*) node_version="${1#--node=}"; shift ;;
    --cpu) cpu="${2:?--cpu needs a CPU number}"; shift 2 ;;
    --cpu=*) cpu="${1#--cpu=}"; shift ;;
    --keep-going) keep_going=1; shift ;;
    --full) full=1; shift ;;
    --no-load) load=0; shift ;;
    --keep) keep=1; shift ;;
    --) shift; vitest_args=("$@"); break ;;
    *) echo "stress-suite: unknown option $1 (see the comment at the top of scripts/stress-suite.sh)" >&2; exit 64 ;;
  esac
done
case "$runs" in '' | *[!0-9]* | 0) echo "stress-suite: --runs must be a whole number above 0, not '$runs'" >&2; exit 64 ;; esac
case "$cpu" in '') ;; *[!0-9]*) echo "stress-suite: --cpu takes a CPU number, not '$cpu'" >&2; exit 64 ;; esac
if [ -n "$cpu" ] && [ "$cpu" -ge "$(nproc --all)" ]; then echo "stress-suite: --cpu $cpu: this machine has CPUs 0 to $(($(nproc --all) - 1))" >&2; exit 64; fi
pin="${cpu:-0}"
command -v taskset >/dev/null || { echo "stress-suite: taskset (util-linux) is missing: apt-get install util-linux" >&2; exit 69; }

private="$(mktemp -d)" # mode 0700: uid 65534 cannot pass it, as under /root
clone="$private/p"
cpus="$(nproc)"
load_pids=()
cleanup() {
  for pid in "${load_pids[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
  if [ "$keep" = 1 ]; then echo "stress-suite: the clone is kept in $clone"; else rm -rf "$private"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "stress-suite: cloning $(git -C "$source_dir" rev-parse --short HEAD) into $clone (parent mode $(stat -c %a "$private"))"
git clone --quiet --no-hardlinks "$source_dir" "$clone" || exit 1
cp -al "$source_dir/node_modules" "$clone/node_modules" || exit 1
if [ -d "$source_dir/tools/lint/node_modules" ]; then cp -al "$source_dir/tools/lint/node_modules" "$clone/tools/lint/node_modules"; fi
cd "$clone" || exit 1
node scripts/system-packages.mjs
npm run build >/dev/null || { echo "stress-suite: the build failed" >&2; exit 1; }
if [ "$node_version" = current ]; then
  node_bin="$(command -v node)"
else
  node_bin="$(node scripts/install-node.mjs "$node_version")" || exit 1
fi
export PATH="$(dirname "$node_bin"):$PATH" # children that start `node` by name get it too
"$node_bin" scripts/runner-cache.mjs || exit 1
vitest=("$node_bin" node_modules/vitest/vitest.mjs run --reporter=default --reporter=json)
echo "stress-suite: on Node $("$node_bin" --version)"

if [ "$load" = 1 ] && [ -n "$cpu" ]; then
  taskset -c "$pin" node -e 'for (;;);' &
  load_pids+=($!)
  echo "stress-suite: a busy loop on CPU $pin; the suite pinned to CPU $pin"
elif [ "$load" = 1 ]; then
  if command -v stress-ng >/dev/null; then
    stress-ng --cpu "$cpus" --quiet &
    load_pids+=($!)
  else
    for _ in $(seq "$cpus"); do
      node -e 'for (;;);' &
      load_pids+=($!)
    done
  fi
  echo "stress-suite: a busy loop on each of $cpus CPUs; the suite pinned to CPU 0"
fi

passed_runs=0
stamp="$(date +%Y%m%d-%H%M%S)-$$"
for run in $(seq "$runs"); do
  started=$(date +%s)
  rm -f .vitest-report.json .vitest-memory-report.json
  if [ "$full" = 1 ]; then
    taskset -c "$pin" npx tsc -p test-d/tsconfig.json
    types=$?
    taskset -c "$pin" "${vitest[@]}" --outputFile=.vitest-report.json "${vitest_args[@]}"
    taskset -c "$pin" "${vitest[@]}" --config vitest.memory.config.ts --outputFile=.vitest-memory-report.json
    taskset -c "$pin" npm run lint
    lint=$?
    summary="$(node scripts/summarize-tests.mjs .vitest-report.json .vitest-memory-report.json --check "type tests=$types" --check "lint=$lint")"
  else
    taskset -c "$pin" "${vitest[@]}" --outputFile=.vitest-report.json "${vitest_args[@]}"
    summary="$(node scripts/summarize-tests.mjs .vitest-report.json)"
  fi
  status=$?
  # Each run's vitest report (times per file and test) is kept outside the clone, for a look afterwards.
  kept="${TMPDIR:-/tmp}/ears-stress-$stamp-run-$run.json"
  cp .vitest-report.json "$kept" 2>/dev/null && echo "stress-suite: run $run's vitest report: $kept"
  echo "stress-suite: run $run of $runs: $summary ($(($(date +%s) - started)) s, load average $(cut -d' ' -f1-3 /proc/loadavg))"
  if [ "$status" = 0 ]; then
    passed_runs=$((passed_runs + 1))
  elif [ "$keep_going" = 0 ]; then
    echo "stress-suite: stopping at the first failing run (--keep-going runs on)"
    runs=$run
    break
  fi
done
echo "stress: $passed_runs of $runs runs passed"
[ "$passed_runs" = "$runs" ]
