#!/usr/bin/env bash
# bench/trips.sh [CMD...]: where the round trips of trapped calls spend
# their time: runs CMD (default: `make -s -B -j2` of a generated tree of
# MAKE_FILES=60 C files) once under `paddock run`, beside HOGS=2 busy loops,
# while perf records the scheduler's switches and wake-ups and the
# supervisor's ioctls system-wide, and prints bench/trips.py's table: for
# every notification answered, how long the notify loop took to be woken
# and receive it, to decide, and how long the caller then waited for a
# CPU (docs/perf.md, issue 35).
# Knobs: HOGS=2, MAKE_FILES=60, PADDOCK= (a paddock binary; default: built
# from this tree), OUT=bench/out. Needs perf and root, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
command -v perf >/dev/null || die "perf not found"
HOGS=${HOGS:-2}
MAKE_FILES=${MAKE_FILES:-60}
[[ $HOGS =~ ^[0-9]+$ ]] || die "HOGS=$HOGS: want a whole number of busy loops, 0 or more"
if [[ -z ${PADDOCK:-} ]]; then
	CGO_ENABLED=0 go build -o "$out/paddock" ./cmd/paddock
	PADDOCK=$out/paddock
fi
tmp=$(mktemp -d)
trap 'stop_hogs; rm -rf "$tmp"' EXIT
cmd=("$@")
if [[ ${#cmd[@]} -eq 0 ]]; then
	make_tree "$tmp/make" "$MAKE_FILES"
	cmd=(make -s -B -j2 -C "$tmp/make")
fi
start_hogs "$HOGS"
echo "tracing ${cmd[*]} under paddock beside $HOGS busy loops, load $(loadavg) ..." >&2
perf record -q -a -o "$tmp/perf.data" \
	-e sched:sched_switch -e sched:sched_wakeup \
	-e raw_syscalls:sys_enter --filter 'id == 16' -e raw_syscalls:sys_exit --filter 'id == 16' -- \
	"$PADDOCK" run --no-notify-stderr --log-level error --journal "$tmp/j.jsonl" -- "${cmd[@]}" >/dev/null
stop_hogs
perf script -i "$tmp/perf.data" >"$tmp/perf.txt" 2>/dev/null
name=$(basename "$PADDOCK")
python3 bench/trips.py "$tmp/perf.txt" "${name:0:15}"
echo "load average at the end: $(loadavg)" >&2
