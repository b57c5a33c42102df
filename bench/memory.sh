#!/usr/bin/env bash
# bench/memory.sh: the supervisor's peak memory with a large agent tree and a
# long journal. Runs
#   paddock run --journal J --log-format json -- bash -c AGENT
# where AGENT starts PROCS (1,000) `sleep` processes, makes REFUSALS (10,000)
# refused signals (bench/storm.c, one thread, kill(FOREIGN, SIGTERM) at a
# `sleep` this script starts outside paddock), then, with every sleep still
# alive, reads VmHWM (peak RSS) and VmRSS of its parent, paddock
# ($PPID), from /proc/$PPID/status, prints them, and kills its sleeps.
# VmHWM is also read right at the start and after the sleeps are up, to show
# where the memory goes. Target: VmHWM <= 25 MiB. Prints a markdown table
# (also written to bench/out/memory.md).
#
# Run from anywhere, as root:  bench/memory.sh
# Knobs (environment):
#   RUNS=3 PROCS=1000 REFUSALS=10000 SLEEP_S=600 OUT=bench/out
# SLEEP_S is how long each agent sleep would live; it only has to outlast
# the refusals (they are killed at the end either way).
# Needs: go, gcc, python3 (the table).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)

RUNS=${RUNS:-3}
PROCS=${PROCS:-1000}
REFUSALS=${REFUSALS:-10000}
SLEEP_S=${SLEEP_S:-600}
TARGET_KB=$((25 * 1024))

# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

command -v go >/dev/null || die "go not found"
command -v gcc >/dev/null || die "gcc not found"
command -v python3 >/dev/null || die "python3 not found (used for the table)"

echo "building paddock and storm ..." >&2
CGO_ENABLED=0 go build -o "$out/paddock" ./cmd/paddock
gcc -O2 -Wall -pthread -o "$out/storm" bench/storm.c

# The agent. Arguments: storm binary, foreign pid, procs, refusals, sleep
# seconds, file for storm's stderr (paddock's messages to the agent).
# Prints one line of key=value pairs.
agent='
set -u
storm=$1 foreign=$2 n=$3 calls=$4 secs=$5 err=$6
hwm() { awk "/^$1:/ {print \$2}" /proc/$PPID/status; }
read -r pcomm </proc/$PPID/comm
hwm_start=$(hwm VmHWM)
pids=()
for ((i = 0; i < n; i++)); do
	sleep "$secs" &
	pids+=($!)
done
# Wait until every child has exec'"'"'d sleep (so the tree is the real one).
for ((try = 0; try < 600; try++)); do
	up=0
	for p in "${pids[@]}"; do
		read -r c 2>/dev/null </proc/$p/comm && [[ $c == sleep ]] && up=$((up + 1))
	done
	((up == n)) && break
	sleep 0.1
done
hwm_tree=$(hwm VmHWM)
line=$("$storm" "$foreign" 1 "$calls" eperm 2>"$err") || echo "storm failed: $line" >&2
# Every sleep must still be alive when the peak is read.
alive=0
for p in "${pids[@]}"; do
	kill -0 "$p" 2>/dev/null && alive=$((alive + 1))
done
hwm_end=$(hwm VmHWM)
rss_end=$(hwm VmRSS)
threads=$(hwm Threads)
echo "parent_comm=$pcomm alive=$alive hwm_start_kb=$hwm_start hwm_tree_kb=$hwm_tree hwm_end_kb=$hwm_end rss_end_kb=$rss_end paddock_threads=$threads $line"
kill "${pids[@]}"
wait
'


foreign=
cleanup() {
	local rc=$?
	reap "$foreign"
	exit "$rc"
}
trap cleanup EXIT

rows=$out/memory.tsv
: >"$rows"
fail=0
for ((r = 1; r <= RUNS; r++)); do
	sleep 3600 &
	foreign=$!
	sleep 0.2
	fstart=$(starttime "$foreign") || die "foreign sleep did not start"
	j=$out/memory-j.jsonl
	plog=$out/memory-paddock.log
	err=$out/memory-agent.err
	rm -f "$j" "$j".[0-9]* "$plog" "$err"
	load_start=$(loadavg)
	t0=$EPOCHREALTIME
	set +e
	line=$("$out/paddock" run --journal "$j" --log-format json -- bash -c "$agent" agent \
		"$out/storm" "$foreign" "$PROCS" "$REFUSALS" "$SLEEP_S" "$err" 2>"$plog")
	rc=$?
	set -e
	t1=$EPOCHREALTIME
	load_end=$(loadavg)
	run_s=$(python3 -c "print('%.1f' % ($t1 - $t0))")
	echo "round $r (rc $rc, ${run_s}s): $line" >&2
	[[ $rc == 0 ]] || {
		echo "bench/memory.sh: round $r: paddock run exited $rc; log tail:" >&2
		tail -5 "$plog" >&2
		fail=1
	}
	if ! survived "$foreign" "$fstart"; then
		echo "bench/memory.sh: the foreign sleep $foreign did not survive round $r" >&2
		fail=1
	fi
	jfiles=("$j")
	for f in "$j".[0-9]*; do
		if [[ -e $f ]]; then jfiles+=("$f"); fi
	done
	jrec=$(cat "${jfiles[@]}" | grep -c '"action":"signal_denied"' || true)
	jbytes=$(cat "${jfiles[@]}" | wc -c)
	dropped=$({ grep 'refusals came faster than they could be reported' "$plog" || true; } |
		{ grep -oE 'dropped[^0-9]*[0-9]+' || true; } | awk '{gsub(/[^0-9]/, ""); s += $0} END {print s + 0}')
	hwm=$(field hwm_end_kb "$line")
	((hwm <= TARGET_KB)) || echo "bench/memory.sh: round $r: VmHWM $hwm kB is over the 25 MiB target" >&2
	printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$load_start" "$load_end" \
		"$(field parent_comm "$line")" "$(field alive "$line")" "$(field eperm "$line")" \
		"$(field hwm_start_kb "$line")" "$(field hwm_tree_kb "$line")" "$hwm" \
		"$(field rss_end_kb "$line")" "$(field paddock_threads "$line")" \
		"$jrec" "$jbytes" "$dropped" "$run_s" >>"$rows"
	reap "$foreign"
	foreign=
done

cpu=$(cpu_model)
python3 - "$rows" "$out/memory.md" "$cpu" "$(uname -r)" "$(nproc)" "$PROCS" "$REFUSALS" <<'PY'
import sys

rows, dest, cpu, kernel, ncpu, procs, refusals = sys.argv[1:]
lines = ["Machine: %s, %s CPUs, Linux %s; agent: %s sleeps, then %s refused kill(FOREIGN, SIGTERM)." % (cpu, ncpu, kernel, procs, refusals), ""]
lines.append("| run | load avg at start | load avg at end | read from | live sleeps at the reading | refusals (EPERM) | VmHWM at agent start, MiB | VmHWM with the tree up, MiB | **VmHWM before exit, MiB** | VmRSS before exit, MiB | paddock threads | journal `signal_denied` | journal MB | dropped | run s | <= 25 MiB |")
lines.append("|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for l in open(rows):
    r, ls, le, comm, alive, eperm, h0, h1, h2, rss, thr, jrec, jbytes, dropped, run_s = l.rstrip("\n").split("\t")
    mib = lambda kb: "%.1f" % (int(kb) / 1024)
    lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | **%s** | %s | %s | %s | %.1f | %s | %s | %s |" % (
        r, ls, le, comm, alive, eperm, mib(h0), mib(h1), mib(h2), mib(rss), thr, jrec, int(jbytes) / 1e6, dropped, run_s,
        "yes" if int(h2) <= 25 * 1024 else "**no**"))
text = "\n".join(lines) + "\n"
sys.stdout.write(text)
open(dest, "w").write(text)
PY
echo "raw rows: $rows; table: $out/memory.md" >&2
exit $fail
