#!/usr/bin/env bash
# bench/abba.sh ROUNDS A B [N]: forkexec.sh N (default 1500) under A and
# under B, side by side in A B, B A, A B ... order, and the median of the
# rounds' B/A ratios with their quartiles: the A/B figures of docs/perf.md.
# A and B are each "bare", "floor" (bench/floor.c with exec trapped) or a
# paddock binary, run as `B run --no-notify-stderr --log-level error --`.
# Build the floor first (bench/run.sh does: bench/out/floor).
# Needs: python3 (statistics). Run from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
[[ $# -ge 3 ]] || die "usage: bench/abba.sh ROUNDS A B [N]"
rounds=$1 a=$2 b=$3 n=${4:-1500}
floor=${OUT:-$root/bench/out}/floor
[[ -n ${EPOCHREALTIME:-} ]] || die "needs bash 5 (EPOCHREALTIME)"

run() {
	case $1 in
	bare) /bin/sh bench/forkexec.sh "$n" ;;
	floor) FLOOR_EXEC=1 "$floor" /bin/sh bench/forkexec.sh "$n" ;;
	*) "$1" run --no-notify-stderr --log-level error -- /bin/sh bench/forkexec.sh "$n" ;;
	esac
}

# timed MODE: runs MODE once and prints its wall time in seconds.
timed() {
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
done | python3 -c '
import statistics as st, sys
r = [tuple(map(float, l.split())) for l in sys.stdin]
rat = sorted(b / a for a, b in r)
q = st.quantiles(rat, n=4) if len(rat) > 1 else rat * 3
print("B/A median %.3f, quartiles %.3f-%.3f; A median %.3f s, B median %.3f s; B faster in %d of %d rounds"
      % (st.median(rat), q[0], q[2], st.median(a for a, b in r), st.median(b for a, b in r),
         sum(b < a for a, b in r), len(r)))'
