#!/usr/bin/env bash
# bench/storm.sh: a refusal storm. bench/storm.c runs THREADS threads that
# call kill(FOREIGN, SIGTERM) in a loop, CALLS calls in all, under
# `paddock run --journal J --log-format json`; FOREIGN is a `sleep 300` this
# script starts outside paddock. It checks that every call got EPERM, that
# the foreign sleep is still alive (same pid, same start time) at the end,
# counts what reached the agent's stderr (which must be summarised, not one
# line per refusal), the journal's signal_denied records and the reporter's
# own "dropped" count, and reports throughput and the supervisor's CPU time
# (utime+stime of the paddock process during the storm, read by storm.c from
# /proc/PPID/stat). Prints a markdown table (also written to
# bench/out/storm.md).
#
# Each round runs three modes, one after the other:
#   paddock      the storm under paddock run (every call refused by paddock)
#   bare-eperm   the same storm bare, as uid 65534 (setpriv) against the same
#                root-owned foreign sleep: the kernel itself answers EPERM, so
#                nothing is signalled. The cost of a refused kill(2) unsupervised.
#   bare-ignored the same storm bare, as root, against a sleep of this script's
#                own started with SIGTERM ignored (trap '' TERM; exec sleep):
#                every call succeeds and the kernel drops the signal. The cost
#                of a delivered-and-ignored kill(2). (A bare root storm against
#                the foreign sleep would kill it, so it is never run.)
#
# Run from anywhere, as root:  bench/storm.sh
# Knobs (environment):
#   RUNS=3 THREADS=16 CALLS=100000 OUT=bench/out
# Needs: go, gcc, setpriv (util-linux), python3 (the table).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)

RUNS=${RUNS:-3}
THREADS=${THREADS:-16}
CALLS=${CALLS:-100000}

# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

command -v go >/dev/null || die "go not found"
command -v gcc >/dev/null || die "gcc not found"
command -v setpriv >/dev/null || die "setpriv not found (util-linux)"
command -v python3 >/dev/null || die "python3 not found (used for the table)"
[[ $(id -u) == 0 ]] || die "run as root (the bare-eperm mode drops to uid 65534)"

echo "building paddock and storm ..." >&2
CGO_ENABLED=0 go build -o "$out/paddock" ./cmd/paddock
gcc -O2 -Wall -pthread -o "$out/storm" bench/storm.c


# The foreign process: started here, outside paddock, killed at the end.
foreign=
ignorer=
cleanup() {
	local rc=$?
	reap "$foreign"
	reap "$ignorer" KILL
	exit "$rc"
}
trap cleanup EXIT

rows=$out/storm.tsv
: >"$rows"
fail=0

for ((r = 1; r <= RUNS; r++)); do
	sleep 300 &
	foreign=$!
	sh -c "trap '' TERM; exec sleep 300" &
	ignorer=$!
	sleep 0.2 # let both exec into sleep
	fstart=$(starttime "$foreign") || die "foreign sleep $foreign did not start"

	for mode in paddock bare-eperm bare-ignored; do
		load=$(loadavg)
		j=$out/storm-j.jsonl
		agent_err=$out/storm-agent-$mode.err
		plog=$out/storm-paddock-$mode.log
		rm -f "$j" "$j".[0-9]* "$agent_err" "$plog"
		t0=$EPOCHREALTIME
		set +e
		case $mode in
		paddock)
			line=$("$out/paddock" run --journal "$j" --log-format json -- \
				sh -c 'f=$1; shift; exec "$@" 2>"$f"' sh "$agent_err" \
				"$out/storm" "$foreign" "$THREADS" "$CALLS" eperm 2>"$plog")
			;;
		bare-eperm)
			line=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
				"$out/storm" "$foreign" "$THREADS" "$CALLS" eperm 2>"$agent_err")
			;;
		bare-ignored)
			line=$("$out/storm" "$ignorer" "$THREADS" "$CALLS" ok 2>"$agent_err")
			;;
		esac
		rc=$?
		set -e
		t1=$EPOCHREALTIME
		run_s=$(python3 -c "print('%.2f' % ($t1 - $t0))")
		[[ -n $line ]] || die "$mode: storm printed nothing (rc $rc); stderr: $(head -c 2000 "$agent_err")"
		if ((rc != 0)); then
			echo "bench/storm.sh: $mode round $r: rc $rc: $line" >&2
			fail=1
		fi

		# The foreign sleep must have survived every mode.
		if ! survived "$foreign" "$fstart"; then
			echo "bench/storm.sh: the foreign sleep $foreign did not survive $mode round $r" >&2
			fail=1
		fi

		# What reached the agent's stderr (paddock's messages), its own log,
		# and the journal. Only paddock mode has any.
		refused_lines=$(grep -c '^paddock refused' "$agent_err" || true)
		more_lines=$(grep -cE '^paddock: [0-9]+ more refusals' "$agent_err" || true)
		more_sum=$({ grep -oE '^paddock: [0-9]+ more refusals' "$agent_err" || true; } | awk '{s += $2} END {print s + 0}')
		err_lines=$(wc -l <"$agent_err")
		journal_denied=0 journal_bytes=0 log_warn=0 dropped=0
		if [[ $mode == paddock ]]; then
			# The live journal and any rotated files (J.1, J.2, ...).
			jfiles=("$j")
			for f in "$j".[0-9]*; do
				if [[ -e $f ]]; then jfiles+=("$f"); fi
			done
			journal_denied=$(cat "${jfiles[@]}" | grep -c "\"action\":\"signal_denied\".*\"target\":$foreign[,}]" || true)
			journal_bytes=$(cat "${jfiles[@]}" | wc -c)
			log_warn=$(grep -c '"level":"warn"' "$plog" || true)
			dropped=$({ grep 'refusals came faster than they could be reported' "$plog" || true; } |
				{ grep -oE '"dropped":[0-9]+' || true; } | awk -F: '{s += $2} END {print s + 0}')
		fi
		printf '%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
			"$mode" "$r" "$load" \
			"$(field calls "$line")" "$(field eperm "$line")" "$(field ok "$line")" \
			"$(($(field esrch "$line") + $(field other "$line")))" \
			"$(field wall_s "$line")" "$(field per_s "$line")" "$(field self_cpu_s "$line")" \
			"$(field parent_cpu_s "$line")" "$run_s" \
			"$refused_lines" "$more_lines" "$more_sum" "$err_lines" \
			"$journal_denied" "$dropped" "$log_warn" "$journal_bytes" >>"$rows"
		echo "round $r $mode: $line" >&2
		if [[ $mode == paddock ]]; then
			echo "  agent stderr: $refused_lines 'paddock refused' + $more_lines 'more refusals' lines ($err_lines in all); journal: $journal_denied signal_denied ($journal_bytes bytes); dropped: $dropped; paddock log: $log_warn warn lines" >&2
		fi
	done

	reap "$foreign"
	foreign=
	reap "$ignorer" KILL
	ignorer=
done

cpu=$(cpu_model)
python3 - "$rows" "$out/storm.md" "$cpu" "$(uname -r)" "$(nproc)" "$THREADS" "$CALLS" <<'PY'
import sys

rows, dest, cpu, kernel, ncpu, threads, calls = sys.argv[1:]
lines = ["Machine: %s, %s CPUs, Linux %s; %s threads, %s kill(FOREIGN, SIGTERM) calls per run." % (cpu, ncpu, kernel, threads, calls), ""]
lines.append("| mode | run | load avg (1/5/15 min) | calls | EPERM | returned 0 | other errno | storm wall s | calls/s | storm's own CPU s | paddock CPU s (during storm) | paddock CPU per refusal, us | whole run s |")
lines.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
rep = []
for l in open(rows):
    (mode, r, load, n, eperm, ok, other, wall, per_s, self_cpu, pcpu, run_s,
     refused, more, more_sum, err_lines, jdenied, dropped, log_warn, jbytes) = l.rstrip("\n").split("\t")
    if mode == "paddock":
        per = "%.1f" % (float(pcpu) / int(n) * 1e6)
        pc = pcpu
    else:
        per, pc = "-", "- (no supervisor)"
    lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        mode, r, load, n, eperm, ok, other, wall, per_s, self_cpu, pc, per, run_s))
    if mode == "paddock":
        rep.append((r, load, n, refused, more, more_sum, err_lines, jdenied, dropped, log_warn, jbytes))
lines += ["", "What the paddock runs reported:", ""]
lines.append("| run | load avg | refusals | agent stderr: `paddock refused` lines | agent stderr: `paddock: N more refusals` lines (sum of N) | agent stderr lines in all | journal `signal_denied` records | dropped (paddock log, \"refusals came faster ...\") | journal + dropped | journal MB | paddock's own log (its stderr): warn lines |")
lines.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for (r, load, n, refused, more, more_sum, err_lines, jdenied, dropped, log_warn, jbytes) in rep:
    lines.append("| %s | %s | %s | %s | %s (%s) | %s | %s | %s | %d | %.1f | %s |" % (
        r, load, n, refused, more, more_sum, err_lines, jdenied, dropped, int(jdenied) + int(dropped), int(jbytes) / 1e6, log_warn))
text = "\n".join(lines) + "\n"
sys.stdout.write(text)
open(dest, "w").write(text)
PY
echo "raw rows: $rows; table: $out/storm.md" >&2
exit $fail
