#!/usr/bin/env bash
# bench/abba.sh ROUNDS A B [N]: forkexec.sh N (default 1500) under A and
# under B, side by side in A B, B A, A B ... order, and the median of the
# rounds' B/A ratios with their quartiles: the A/B figures of docs/perf.md.
# With WHAT=kill, each round is the hot kill loop instead (killloop N,
# default 20000; its ns per kill is the figure compared; build it first:
# bench/run.sh does, bench/out/killloop). With WHAT=exec, the trapped exec's
# round trip (execloop N, default 20000: bench/out/execloop, built by
# `gcc -O2 -o bench/out/execloop bench/execloop.c`).
# A and B are each "bare", "floor" (bench/floor.c with exec trapped) or a
# paddock binary, run as `B run --no-notify-stderr --log-level error --journal
# TMP/j.jsonl --`.
# Build the floor first (bench/run.sh does: bench/out/floor).
# With HOGS=N, N busy loops run beside every round (2: one per core here),
# the "under contention" figure of issue 35.
# Needs: python3 (statistics). Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
[[ $# -ge 3 ]] || die "usage: bench/abba.sh ROUNDS A B [N]"
what=${WHAT:-forkexec}
case $what in
forkexec) rounds=$1 a=$2 b=$3 n=${4:-1500} ;;
kill | exec) rounds=$1 a=$2 b=$3 n=${4:-20000} ;;
*) die "WHAT=$what: want forkexec, kill or exec" ;;
esac
floor=${OUT:-$root/bench/out}/floor
killloop=${OUT:-$root/bench/out}/killloop
[[ -n ${EPOCHREALTIME:-} ]] || die "needs bash 5 (EPOCHREALTIME)"

# The sessions journal into a directory of the script's own, never the
# user's journal.
journal=$(mktemp -d)
trap 'stop_hogs; rm -rf "$journal"' EXIT
hogs=${HOGS:-0}
[[ $hogs =~ ^[0-9]+$ ]] || die "HOGS=$hogs: want a whole number of busy loops, 0 or more"
start_hogs "$hogs"

run() {
	local cmd=(/bin/sh bench/forkexec.sh "$n")
	[[ $what == kill ]] && cmd=("$killloop" "$n")
	[[ $what == exec ]] && cmd=("${killloop%/*}/execloop" "$n")
	case $1 in
	bare) "${cmd[@]}" ;;
	floor) FLOOR_EXEC=1 "$floor" "${cmd[@]}" ;;
	*) "$1" run --no-notify-stderr --log-level error --journal "$journal/j.jsonl" -- "${cmd[@]}" ;;
	esac
}

# timed MODE: runs MODE once and prints its wall time in seconds (the
# kill loop: its ns per kill).
timed() {
	if [[ $what != forkexec ]]; then
		run "$1" | sed -n 's/.*ns_per_op=\([0-9.]*\).*/\1/p' | grep . || die "$1 failed"
		return
	fi
	local t0=$EPOCHREALTIME
	run "$1" || die "$1 failed"
	local t1=$EPOCHREALTIME
	python3 -c "print($t1 - $t0)"
}

for ((i = 0; i < rounds; i++)); do
	if ((i % 2 == 0)); then
		ta=$(timed "$a")
		tb=$(timed "$b")
	else
		tb=$(timed "$b")
		ta=$(timed "$a")
	fi
	echo "$ta $tb"
done | UNIT=$([[ $what != forkexec ]] && echo ns || echo s) python3 -c '
import os, statistics as st, sys
u = os.environ["UNIT"]
r = [tuple(map(float, l.split())) for l in sys.stdin]
rat = sorted(b / a for a, b in r)
q = st.quantiles(rat, n=4) if len(rat) > 1 else rat * 3
print("load average %s; " % open("/proc/loadavg").read().split()[0], end="")
print("B/A median %.3f, quartiles %.3f-%.3f; A median %.3f %s, B median %.3f %s; B faster in %d of %d rounds"
      % (st.median(rat), q[0], q[2], st.median(a for a, b in r), u, st.median(b for a, b in r), u,
         sum(b < a for a, b in r), len(r)))'
