#!/usr/bin/env bash
# bench/startup.sh [RUNS]: traces RUNS (default 20) runs of
# `paddock run -- true` with perf (process exec/exit and the seccomp(2)
# call, system-wide) and prints the median of each startup phase. The
# seccomp backend (the default) launches directly:
#
#   supervisor   paddock exec -> seccomp(2) on its launching thread (Go
#                runtime, CLI, journal open, ownership tree, control socket,
#                the agent's hardening)
#   launch       filter installed -> the agent command execs (the fork, and
#                the agent's execve decided by the notify loop)
#
# BACKEND=ptrace goes through a re-executed init instead:
#
#   supervisor   paddock exec -> the init execs
#   init         init exec -> seccomp(2) installs the filter (a second Go
#                runtime start)
#   handoff      filter installed -> the agent command execs (thread id sent
#                to the supervisor, seized, go-ahead back)
#
# and both end with
#
#   agent        agent exec -> agent exit (true itself)
#   teardown     agent exit -> the paddock process is gone
#
# Needs perf and root; builds bench/out/paddock like run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
backend=${BACKEND:-seccomp}
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
	bash -c 'for ((i = 0; i < $1; i++)); do "$2" run --backend "$5" --no-notify-stderr --log-level error --journal "$3" -- "$4" || exit 1; done' \
	_ "$runs" "$out/paddock" "$out/j.jsonl" "$truebin" "$backend"
perf script -i "$out/startup.data" --ns -F comm,pid,tid,time,event,trace >"$out/startup.txt" 2>/dev/null
python3 - "$out/startup.txt" "$truebin" <<'PY'
import re, statistics, sys

path, truebin = sys.argv[1], sys.argv[2]
rx = re.compile(r"^\s*(\S.*?)\s+(\d+)/(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)$")
runs, owner = [], {}  # owner: pid (paddock, its init, the agent) -> its run
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
            owner[pid] = runs[-1]
        elif fn == "/proc/self/exe" and runs:
            # The ptrace backend's init (a re-executed paddock).
            runs[-1]["init"] = t
            owner[pid] = runs[-1]
        elif fn == truebin and runs and "agent" not in runs[-1]:
            runs[-1]["agent"], runs[-1]["agent_pid"] = t, pid
            owner[pid] = runs[-1]
    elif ev == "raw_syscalls:sys_enter" and pid in owner and "filter" not in owner[pid]:
        owner[pid]["filter"] = t
    elif ev == "sched:sched_process_exit" and "group_dead=true" in rest and pid in owner:
        r = owner[pid]
        if pid == r.get("agent_pid"):
            r["agent_exit"] = t
        elif pid == r["pid"]:
            r["gone"] = t

direct = [("supervisor (paddock exec, then seccomp(2) on its launching thread)", "exec", "filter"),
          ("launch (filter installed, then the agent's exec, decided by the notify loop)", "filter", "agent")]
viainit = [("supervisor (paddock exec, then the init's exec)", "exec", "init"),
           ("init (the init's exec, then seccomp(2))", "init", "filter"),
           ("handoff (filter installed, then the agent's exec)", "filter", "agent")]
tail = [("agent", "agent", "agent_exit"), ("teardown (the agent exits, then paddock is gone)", "agent_exit", "gone"),
        ("total", "exec", "gone")]
for label, phases in (("direct launch (seccomp backend)", direct + tail), ("through the init (ptrace backend)", viainit + tail)):
    done = [r for r in runs if all(k in r for _, a, b in phases for k in (a, b))]
    if label.startswith("direct"):
        done = [r for r in done if "init" not in r]
    if not done:
        continue
    print("%s, runs traced: %d" % (label, len(done)))
    print()
    print("| phase | median ms | min ms | max ms |")
    print("|---|---:|---:|---:|")
    for name, a, b in phases:
        xs = [r[b] - r[a] for r in done]
        print("| %s | %.2f | %.2f | %.2f |" % (name, statistics.median(xs), min(xs), max(xs)))
    print()
if not runs:
    sys.exit("bench/startup.sh: no complete run in the trace")
PY
