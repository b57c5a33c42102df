#!/usr/bin/env bash
# bench/phases.sh [hot|spaced] [N]: traces N supervised kill() calls of
# bench/killloop with perf (syscall and scheduler tracepoints, system-wide)
# and prints where each call's time goes: waking the notify thread, paddock's
# decision (split into its syscalls and Go code), and the answer. Needs perf
# and root; builds bench/out/paddock and bench/out/killloop like run.sh.
# Tracing adds its own overhead: compare phases with each other, not with
# run.sh's untraced totals.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-spaced}
n=${2:-2000}
case $mode in
hot) args=("$n") ;;
spaced) args=("$n" spaced) ;;
*)
	echo "usage: bench/phases.sh [hot|spaced] [N]" >&2
	exit 2
	;;
esac
command -v perf >/dev/null || {
	echo "bench/phases.sh: perf not found" >&2
	exit 1
}
out=bench/out
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/paddock" ./cmd/paddock
gcc -O2 -Wall -o "$out/killloop" bench/killloop.c
perf record -q -o "$out/phases.data" -a \
	-e raw_syscalls:sys_enter -e raw_syscalls:sys_exit \
	-e sched:sched_switch -e sched:sched_wakeup -- \
	"$out/paddock" run --no-notify-stderr --log-level error --journal "$out/j.jsonl" -- \
	"$out/killloop" "${args[@]}"
perf script -i "$out/phases.data" --ns -F comm,tid,cpu,time,event,trace >"$out/phases.txt" 2>/dev/null
python3 bench/phases.py "$out/phases.txt"
