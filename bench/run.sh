#!/usr/bin/env bash
# bench/run.sh: builds paddock and the benchmark helpers, runs each workload
# bare and under `paddock run` alternately (A B A B ...), and prints a
# markdown table (also written to bench/out/results.md).
#
# Run from anywhere:  bench/run.sh
# Knobs (environment):
#   PAIRS=5            rounds per workload, each running every mode once, in
#                      alternating order (at least 5; 15 for a ratio near a target)
#   KILL_N=20000       kill() calls per hot-loop run
#   SPACED_N=3000      kill() calls per spaced run (300 us apart)
#   FORKEXEC_N=1500    fork+exec of /bin/true per forkexec run
#   STARTUP_RUNS=30    bare/paddock pairs of `true` for the startup figure
#   BACKEND=auto       paddock run --backend: auto, seccomp or ptrace
#   OUT=bench/out      where the binaries, samples and results.md go
#
# Needs: go, gcc, python3 (statistics only). Linux with seccomp user
# notification; the supervised runs fail loudly if paddock cannot start.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)

PAIRS=${PAIRS:-5}
KILL_N=${KILL_N:-20000}
SPACED_N=${SPACED_N:-3000}
FORKEXEC_N=${FORKEXEC_N:-1500}
STARTUP_RUNS=${STARTUP_RUNS:-30}
BACKEND=${BACKEND:-auto}

# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

command -v go >/dev/null || die "go not found"
command -v gcc >/dev/null || die "gcc not found"
command -v python3 >/dev/null || die "python3 not found (used for the statistics)"

echo "building paddock and killloop ..." >&2
CGO_ENABLED=0 go build -o "$out/paddock" ./cmd/paddock
gcc -O2 -Wall -o "$out/killloop" bench/killloop.c
# The floor supervisor (bench/floor.c): CONTINUE everything, sync wake-up on;
# x86_64 only.
floor_modes=()
if [[ $(uname -m) == x86_64 ]]; then
	gcc -O2 -Wall -o "$out/floor" bench/floor.c
	floor_modes=(floor)
fi
# The benchmark test binary doubles as a supervisor that traps signals only
# (paddock run also traps exec); see bench/supervise_test.go.
CGO_ENABLED=0 go test -c -o "$out/bench.test" ./bench/

journal=$out/j.jsonl
rm -f "$journal"
pd=("$out/paddock" run --backend "$BACKEND" --no-notify-stderr --log-level error --journal "$journal" --)
sig=(env PADDOCK_BACKEND="$BACKEND" "$out/bench.test" __bench_supervise_signals --)
truebin=$(type -P true) || die "no true binary on PATH"

# Sanity: paddock must actually supervise (a failed start would make every
# "paddock" number a bare number).
"${pd[@]}" "$truebin" || die "paddock run -- true failed"

load_start=$(loadavg)
read -r load1 _ </proc/loadavg
if python3 -c "import sys; sys.exit(0 if float('$load1') > 1.0 else 1)"; then
	echo "bench/run.sh: warning: load average $load1 on $(nproc) CPUs; other work will skew the numbers" >&2
fi

# Raw samples, one "workload<TAB>mode<TAB>value" line each.
samples=$out/samples.tsv
: >"$samples"
rec() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$samples"; }

# run_mode MODE CMD...: runs CMD bare, under paddock run, or under the
# signals-only supervisor.
run_mode() {
	local mode=$1
	shift
	case $mode in
	paddock) "${pd[@]}" "$@" ;;
	signals) "${sig[@]}" "$@" ;;
	floor) "$out/floor" "$@" ;;
	floorexec) FLOOR_EXEC=1 "$out/floor" "$@" ;;
	*) "$@" ;;
	esac
}

echo "(a) hot kill loop: $PAIRS pairs of $KILL_N kill(child, SIGCONT) ..." >&2
for ((i = 0; i < PAIRS; i++)); do
	for mode in $(order "$i" bare paddock "${floor_modes[@]}"); do
		line=$(run_mode "$mode" "$out/killloop" "$KILL_N") || die "killloop ($mode) failed"
		ns=$(field ns_per_op "$line")
		v=$(python3 -c "print($ns/1000)")
		if [[ $mode == floor ]]; then
			rec hot_floor bare "$v"
		else
			rec hot "$mode" "$v"
			[[ $mode == paddock ]] && rec hot_floor paddock "$v"
		fi
	done
done

echo "(b) spaced kill: $PAIRS pairs of $SPACED_N calls 300 us apart ..." >&2
for ((i = 0; i < PAIRS; i++)); do
	for mode in $(order "$i" bare paddock "${floor_modes[@]}"); do
		line=$(run_mode "$mode" "$out/killloop" "$SPACED_N" spaced) || die "killloop spaced ($mode) failed"
		if [[ $mode == floor ]]; then
			rec spaced_floor bare "$(field p50_us "$line")"
			continue
		fi
		rec spaced_p50 "$mode" "$(field p50_us "$line")"
		rec spaced_p99 "$mode" "$(field p99_us "$line")"
		[[ $mode == paddock ]] && rec spaced_floor paddock "$(field p50_us "$line")"
	done
done

echo "(c) forkexec: $PAIRS rounds of $FORKEXEC_N fork+exec of /bin/true, bare / paddock run / signals only / floor with exec trapped ..." >&2
fe_modes=(bare paddock signals)
[[ ${#floor_modes[@]} -gt 0 ]] && fe_modes+=(floorexec)
for ((i = 0; i < PAIRS; i++)); do
	for mode in $(order "$i" "${fe_modes[@]}"); do
		now
		t0=$now
		run_mode "$mode" /bin/sh bench/forkexec.sh "$FORKEXEC_N" || die "forkexec.sh ($mode) failed"
		now
		t1=$now
		ms=$(((t1 - t0) / 1000000))
		v=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
		case $mode in
		bare)
			rec forkexec bare "$v"
			rec forkexec_sig bare "$v"
			rec forkexec_floorbare bare "$v"
			;;
		paddock)
			rec forkexec paddock "$v"
			rec forkexec_floor paddock "$v"
			;;
		signals) rec forkexec_sig paddock "$v" ;;
		floorexec)
			rec forkexec_floor bare "$v"
			rec forkexec_floorbare paddock "$v"
			;;
		esac
	done
done

echo "(d) startup: $STARTUP_RUNS pairs of true vs paddock run -- true ..." >&2
for ((i = 0; i < STARTUP_RUNS; i++)); do
	for mode in $(order "$i" bare paddock); do
		now
		t0=$now
		run_mode "$mode" "$truebin" || die "true ($mode) failed"
		now
		t1=$now
		us=$(((t1 - t0) / 1000))
		rec startup "$mode" "$(printf '%d.%03d' $((us / 1000)) $((us % 1000)))"
	done
done

load_end=$(loadavg)

# Machine facts for the report header.
cpu=$(cpu_model)
kernel=$(uname -r)
ncpu=$(nproc)

python3 - "$samples" "$out/results.md" "$kernel" "$ncpu" "$cpu" "$PAIRS" "$KILL_N" "$SPACED_N" "$FORKEXEC_N" "$STARTUP_RUNS" "$load_start" "$load_end" "$BACKEND" <<'PY'
import statistics, sys

samples, dest, kernel, ncpu, cpu, pairs, kill_n, spaced_n, fe_n, st_runs, load_start, load_end, backend = sys.argv[1:]
vals = {}
for line in open(samples):
    w, mode, v = line.rstrip("\n").split("\t")
    vals.setdefault((w, mode), []).append(float(v))

def med(w, m):
    return statistics.median(vals[(w, m)])

def spread(w, m):
    xs = vals[(w, m)]
    return "%.2f-%.2f" % (min(xs), max(xs))

def rounds(w):
    """Per-round ratios, paddock over bare: the i-th samples of each were
    taken side by side, so the machine's drift between rounds cancels."""
    return sorted(p / b for b, p in zip(vals[(w, "bare")], vals[(w, "paddock")]) if b)

def quartiles(xs):
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else xs * 3
    return q[0], statistics.median(xs), q[2]

# workload, label, unit, target description, check(bare, paddock, ratio) -> bool
# (ratio: the median of the per-round ratios)
rows = [
    ("hot", "(a) hot kill loop, %s calls" % kill_n, "us/op",
     "about 10 us/op supervised", lambda b, p, r: p <= 10.0),
    ("hot_floor", "(a') hot kill loop: floor supervisor (\"bare\" column) vs paddock", "us/op",
     "<= 1.1x the floor", lambda b, p, r: r <= 1.1),
    ("spaced_p50", "(b) spaced kill p50, %s calls 300 us apart" % spaced_n, "us",
     "p50 <= 30 us supervised", lambda b, p, r: p <= 30.0),
    ("spaced_p99", "(b) spaced kill p99", "us", "none (reference)", None),
    ("spaced_floor", "(b') spaced kill p50: floor supervisor (\"bare\" column) vs paddock", "us", "none (reference)", None),
    ("forkexec_sig", "(c) forkexec.sh, %s x /bin/true, signals trapped only" % fe_n, "s",
     "<= 1.05x", lambda b, p, r: r <= 1.05),
    ("forkexec", "(c') forkexec.sh, %s x /bin/true, paddock run (exec trapped too)" % fe_n, "s",
     "<= 1.15x (exec guards; the performance issue's 1.10x: docs/perf.md)", lambda b, p, r: r <= 1.15),
    ("forkexec_floorbare", "(c'') the same under the floor supervisor with exec trapped (\"paddock\" column: the floor)", "s",
     "none (reference)", None),
    ("forkexec_floor", "(c''') the same: floor supervisor with exec trapped (\"bare\" column) vs paddock run", "s",
     "none (reference)", None),
    ("startup", "(d) startup, true, %s runs each" % st_runs, "ms",
     "< 10 ms added", lambda b, p, r: p - b < 10.0),
]

lines = []
lines.append("Machine: %s, %s CPUs, Linux %s; paddock run --backend %s; %s rounds per workload, the modes run side "
             "by side in each, in alternating order (A B, B A, ...); load average %s at start, %s at end. "
             "Ratio: the median of the rounds' ratios (paddock over bare in the same round), with the quartiles; "
             "targets on a ratio are checked on it." % (cpu, ncpu, kernel, backend, pairs, load_start, load_end))
lines.append("")
lines.append("| workload | unit | bare median | paddock median | ratio (median of rounds) | rounds' quartiles | added | bare spread (min-max) | paddock spread (min-max) | target | met |")
lines.append("|---|---|---:|---:|---:|---|---:|---|---|---|---|")
for w, label, unit, target, check in rows:
    if (w, "bare") not in vals or (w, "paddock") not in vals:
        continue  # not run (PAIRS=0 or STARTUP_RUNS=0)
    b, p = med(w, "bare"), med(w, "paddock")
    q1, r, q3 = quartiles(rounds(w))
    met = "-" if check is None else ("yes" if check(b, p, r) else "**no**")
    lines.append("| %s | %s | %.2f | %.2f | %.3fx | %.3f-%.3f | %+.2f | %s | %s | %s | %s |" % (
        label, unit, b, p, r, q1, q3, p - b,
        spread(w, "bare"), spread(w, "paddock"), target, met))
text = "\n".join(lines) + "\n"
sys.stdout.write(text)
with open(dest, "w") as f:
    f.write(text)
PY
echo "raw samples: $out/samples.tsv; table: $out/results.md" >&2
