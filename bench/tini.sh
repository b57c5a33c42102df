#!/usr/bin/env bash
# bench/tini.sh: paddock as a container init side by side with tini (Debian's
# package): startup (`INIT -- true`), reaping 1,000 orphans that exit
# together (re-parented to the init; timed until the init's only child is
# CMD again, zombies included), and the peak RSS of that run (/usr/bin/time's
# maximum resident set size, the largest process of the run: the init, as
# a rule). Each is run under `unshare --pid --fork
# --mount-proc`, so that the init is PID 1 as in a container. Prints a
# markdown table (also written to bench/out/tini.md).
#
# Run from anywhere, as root:  bench/tini.sh
# Knobs (environment):
#   RUNS=20        startups per init (the median is reported)
#   ORPHANS=1000   orphans per reaping run
#   ROUNDS=5       reaping runs per init (the median is reported)
#   BACKEND=seccomp
#   OUT=bench/out
#
# Needs: go, tini (apt-get install -y tini, done here when missing and
# root), /usr/bin/time, unshare. Targets (issue 21): startup and reaping
# within 2x tini, the init's peak RSS under 8 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
RUNS=${RUNS:-20}
ORPHANS=${ORPHANS:-1000}
ROUNDS=${ROUNDS:-5}
BACKEND=${BACKEND:-seccomp}

# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
command -v go >/dev/null || die "go not found"
if ! command -v tini >/dev/null; then
	[[ $(id -u) == 0 ]] || die "tini not found (apt-get install -y tini)"
	apt-get install -y tini >/dev/null || die "apt-get install -y tini failed"
fi
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (apt-get install -y time)"
command -v unshare >/dev/null || die "unshare not found"

CGO_ENABLED=0 go build -o "$out/paddock" ./cmd/paddock
journal=$out/tini-j.jsonl
trap 'rm -f "$journal"*' EXIT
tini=(tini --)
pd=("$out/paddock" run --backend "$BACKEND" --log-level error --no-notify-stderr --journal "$journal" --)
ns=(unshare --pid --fork --mount-proc)
truebin=$(type -P true)

# median of the values given.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# now_ms: monotonic-enough milliseconds.
now_ms() { date +%s%N | cut -c1-16 | awk '{printf "%.3f", $1/1000}'; }

# startup INIT...: median wall ms of RUNS runs of INIT true as PID 1.
startup() {
	local t=() a b
	for ((i = 0; i < RUNS; i++)); do
		a=$(now_ms)
		"${ns[@]}" "$@" "$truebin"
		b=$(now_ms)
		t+=("$(awk -v a="$a" -v b="$b" 'BEGIN {print b - a}')")
	done
	median "${t[@]}"
}

# The reaping workload: ORPHANS processes, double-forked away from CMD (so
# that they are re-parented to the init), all exiting at the same moment.
reap_script='n=$1; f=$(mktemp -u); mkfifo "$f"
for i in $(seq "$n"); do ( (read -r _ < "$f"; exit 0) & ) ; done
sleep 0.5; exec 3<>"$f"; t0=$(date +%s%N)
head -c "$n" /dev/zero | tr "\0" "\n" >&3
while [ "$(pgrep -c -P 1)" -gt 1 ]; do sleep 0.005; done
t1=$(date +%s%N); rm -f "$f"; echo "reap_ms=$(( (t1 - t0) / 1000000 ))"
awk '"'"'/^(VmHWM|RssAnon|RssFile):/ {sub(":", "", $1); print $1 "_kb=" $2}'"'"' /proc/1/status'

# reaping INIT...: medians over ROUNDS runs of the reap ms, the peak RSS
# KiB of the run, and the init's own peak RSS (VmHWM) and its anonymous and
# file-backed (the binary's pages, shared with the page cache) parts at
# the end of the run.
reaping() {
	local ms=() kb=() hwm=() anon=() file=() line
	for ((i = 0; i < ROUNDS; i++)); do
		line=$(/usr/bin/time -f "maxrss_kb=%M" "${ns[@]}" "$@" sh -c "$reap_script" sh "$ORPHANS" 2>&1 | tr '\n' ' ')
		ms+=("$(field reap_ms "$line")")
		kb+=("$(field maxrss_kb "$line")")
		hwm+=("$(field VmHWM_kb "$line")")
		anon+=("$(field RssAnon_kb "$line")")
		file+=("$(field RssFile_kb "$line")")
	done
	echo "$(median "${ms[@]}") $(median "${kb[@]}") $(median "${hwm[@]}") $(median "${anon[@]}") $(median "${file[@]}")"
}

ts=$(startup "${tini[@]}")
ps=$(startup "${pd[@]}")
read -r tr tk th ta tf < <(reaping "${tini[@]}")
read -r pr pk ph pa pf < <(reaping "${pd[@]}")
{
	echo "paddock ($BACKEND) as PID 1 against tini $(tini --version | awk '{print $3}'), $(nproc) CPUs, $(uname -r), load $(loadavg)"
	echo
	echo "| what | tini | paddock | paddock / tini |"
	echo "|---|---|---|---|"
	awk -v t="$ts" -v p="$ps" 'BEGIN {printf "| startup, INIT -- true (ms, median of '"$RUNS"') | %.1f | %.1f | %.2fx |\n", t, p, p/t}'
	awk -v t="$tr" -v p="$pr" 'BEGIN {printf "| reaping '"$ORPHANS"' orphans that exit together (ms, median of '"$ROUNDS"') | %d | %d | %.2fx |\n", t, p, p/t}'
	awk -v t="$tk" -v p="$pk" 'BEGIN {printf "| peak RSS of the whole run, unshare included (MiB) | %.1f | %.1f | %.2fx |\n", t/1024, p/1024, p/t}'
	awk -v t="$th" -v p="$ph" 'BEGIN {printf "| the init'"'"'s own peak RSS, VmHWM (MiB) | %.1f | %.1f | %.2fx |\n", t/1024, p/1024, p/t}'
	awk -v t="$ta" -v p="$pa" 'BEGIN {printf "| of which anonymous at the end, RssAnon (MiB) | %.1f | %.1f | %.2fx |\n", t/1024, p/1024, p/t}'
	awk -v t="$tf" -v p="$pf" 'BEGIN {printf "| and the binary'"'"'s pages, RssFile (MiB) | %.1f | %.1f | %.2fx |\n", t/1024, p/1024, p/t}'
} | tee "$out/tini.md"
