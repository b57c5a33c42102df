#!/usr/bin/env bash
# bench/group.sh: the cost of a process-group signal against a signal to one
# owned process, under paddock run, with 100 and with 1,000 extra processes
# on the host (bench/grouploop.c: kill(child), kill(0) and kill(-pgid) of
# owned groups, and kill(0) from the agent root). Prints a markdown table
# (also written to bench/out/group.md).
#
# Run from anywhere:  bench/group.sh
# Knobs (environment):
#   EXTRA="100 1000"   extra processes (sleep, started by this script,
#                      outside paddock) to run with
#   N=20000            calls of each kind per run
#   ROUNDS=3           runs per size and backend (the median is reported)
#   BACKENDS="seccomp ptrace"
#   BEFORE=PATH        also run this paddock binary (an older build) for a
#                      before/after table
#   OUT=bench/out      where the binaries and group.md go
#
# Needs: go, gcc. The target (issue 19): every group signal costs at most
# 2x the single signal, at both sizes.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
EXTRA=${EXTRA:-100 1000}
N=${N:-20000}
ROUNDS=${ROUNDS:-3}
BACKENDS=${BACKENDS:-seccomp ptrace}

# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
command -v go >/dev/null || die "go not found"
command -v gcc >/dev/null || die "gcc not found"

echo "building paddock and grouploop ..." >&2
CGO_ENABLED=0 go build -o "$out/paddock" ./cmd/paddock
gcc -O2 -Wall -o "$out/grouploop" bench/grouploop.c

journal=$out/group-j.jsonl
extras=()
cleanup() {
	for p in "${extras[@]}"; do reap "$p" KILL; done
	rm -f "$journal"*
}
trap cleanup EXIT

# grow N: keep N extra processes running (started here, outside paddock).
grow() {
	while ((${#extras[@]} < $1)); do
		sleep 600 &
		extras+=("$!")
	done
}

# median of the values given.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# measure LABEL CMD...: ROUNDS runs of grouploop under CMD; prints a table row.
measure() {
	local label=$1 size=$2
	shift 2
	local s=() z=() p=() r=() line
	for ((i = 0; i < ROUNDS; i++)); do
		line=$("$@" "$out/grouploop" "$N") || die "$label: grouploop failed"
		s+=("$(field single_ns "$line")") z+=("$(field zero_ns "$line")")
		p+=("$(field pgid_ns "$line")") r+=("$(field root_zero_ns "$line")")
	done
	local ms mz mp mr=refused
	ms=$(median "${s[@]}") mz=$(median "${z[@]}") mp=$(median "${p[@]}")
	[[ " ${r[*]} " == *" refused "* ]] || mr=$(median "${r[@]}")
	awk -v l="$label" -v n="$size" -v s="$ms" -v z="$mz" -v p="$mp" -v r="$mr" 'BEGIN {
		rs = (r == "refused") ? "refused (EPERM)" : sprintf("%.1f (%.2fx)", r/1000, r/s)
		printf "| %s | %d | %.1f | %.1f (%.2fx) | %.1f (%.2fx) | %s |\n", l, n, s/1000, z/1000, z/s, p/1000, p/s, rs }'
}

{
	echo "Group signals, $(nproc) CPUs, $(uname -r), $(cpu_model), load $(loadavg), N=$N, median of $ROUNDS"
	echo
	echo "| run | extra processes | kill(child) us | kill(0) us (x single) | kill(-pgid) us (x single) | kill(0) from the agent root us (x single) |"
	echo "|---|---|---|---|---|---|"
	for size in $EXTRA; do
		grow "$size"
		# Bare, in a session of its own like the agent under paddock (else
		# kill(0) would reach this script's group, extra processes and all).
		measure bare "$size" setsid --wait
		for b in $BACKENDS; do
			measure "paddock $b" "$size" "$out/paddock" run --backend "$b" --no-notify-stderr --log-level error --journal "$journal" --
			if [[ -n ${BEFORE:-} ]]; then
				measure "before $b" "$size" "$BEFORE" run --backend "$b" --no-notify-stderr --log-level error --journal "$journal.before" --
			fi
		done
	done
} | tee "$out/group.md"
