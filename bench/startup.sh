#!/usr/bin/env bash
# bench/startup.sh [RUNS]: traces RUNS (default 20) runs of
# `paddock run -- true` with perf (process exec/exit and the seccomp(2)
# call, system-wide) and prints the median of each startup phase:
#
#   supervisor   paddock exec -> the re-executed init execs (Go runtime,
#                CLI, journal open, ownership tree, fork)
#   init         init exec -> seccomp(2) installs the filter (a second Go
#                runtime start)
#   handoff      filter installed -> the agent command execs (listener sent
#                to the supervisor, go-ahead back)
#   agent        agent exec -> agent exit (true itself)
#   teardown     agent exit -> the paddock process is gone
#
# Needs perf and root; builds bench/out/paddock like run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
command -v perf >/dev/null || {
	echo "bench/startup.sh: perf not found" >&2
	exit 1
}
out=bench/out
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/paddock" ./cmd/paddock
truebin=$(type -P true)
perf record -q -o "$out/startup.data" -a \
	-e sched:sched_process_exec -e sched:sched_process_exit \
	-e raw_syscalls:sys_enter --filter 'id == 317' -- \
	bash -c 'for ((i = 0; i < $1; i++)); do "$2" run --no-notify-stderr --log-level error --journal "$3" -- "$4" || exit 1; done' \
	_ "$runs" "$out/paddock" "$out/j.jsonl" "$truebin"
perf script -i "$out/startup.data" --ns -F comm,pid,tid,time,event,trace >"$out/startup.txt" 2>/dev/null
python3 - "$out/startup.txt" "$truebin" <<'PY'
import re, statistics, sys

path, truebin = sys.argv[1], sys.argv[2]
rx = re.compile(r"^\s*(\S.*?)\s+(\d+)/(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)$")
runs, by_init = [], {}
for line in open(path, errors="replace"):
    m = rx.match(line)
    if not m:
        continue
    comm, pid, tid, t, ev, rest = m.groups()
    pid, tid, t = int(pid), int(tid), float(t) * 1e3  # ms
    if ev == "sched:sched_process_exec":
        fn = re.search(r"filename=(\S+)", rest).group(1)
        if fn.endswith("/paddock"):
            runs.append({"pid": pid, "exec": t})
        elif fn == "/proc/self/exe" and runs:
            runs[-1]["init_pid"] = pid
            runs[-1]["init"] = t
            by_init[pid] = runs[-1]
        elif pid in by_init and fn == truebin:
            by_init[pid]["agent"] = t
    elif ev == "raw_syscalls:sys_enter" and pid in by_init and "filter" not in by_init[pid]:
        by_init[pid]["filter"] = t
    elif ev == "sched:sched_process_exit" and "group_dead=true" in rest:
        if pid in by_init and "agent" in by_init[pid]:
            by_init[pid]["agent_exit"] = t
        for r in runs:
            if r["pid"] == pid:
                r["gone"] = t

keys = ["exec", "init", "filter", "agent", "agent_exit", "gone"]
done = [r for r in runs if all(k in r for k in keys)]
if not done:
    sys.exit("bench/startup.sh: no complete run in the trace")
phases = [("supervisor", "exec", "init"), ("init", "init", "filter"), ("handoff", "filter", "agent"),
          ("agent", "agent", "agent_exit"), ("teardown", "agent_exit", "gone"), ("total", "exec", "gone")]
print("runs traced: %d" % len(done))
print()
print("| phase | median ms | min ms | max ms |")
print("|---|---:|---:|---:|")
for name, a, b in phases:
    xs = [r[b] - r[a] for r in done]
    print("| %s | %.2f | %.2f | %.2f |" % (name, statistics.median(xs), min(xs), max(xs)))
PY
