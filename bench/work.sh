#!/usr/bin/env bash
# bench/work.sh: the workloads of issue 35 ("Cost"), each run bare and
# under `paddock run --no-notify-stderr --log-level error --journal TMP/j.jsonl
# --` side by side in rounds (A B, B A, ...), and one markdown table of
# medians, spreads and the rounds' own ratios against bare:
#
#   make     `make -s -B -j2` of MAKE_FILES small C files and their link
#            (a generated tree in a temp dir; 3 execs and an object file
#            written per file);
#   gobuild  `go build -o /dev/null ./cmd/paddock` of this repository with
#            GOBUILD=own (default): a fresh copy, for every run, of a
#            GOCACHE primed once with the standard library and the
#            dependencies, so the run compiles paddock's own 31 packages
#            (about 8 s here); GOBUILD=all: `go build -a` with an empty
#            GOCACHE, everything (about 40 s here on 2 cores);
#   git      bench/gitwork.sh GIT_COMMITS (60): an agent's rhythm in git;
#   conn     bench/connloop.c: CONN_N loopback TCP and CONN_N unix
#            pathname-socket connect+accept+close cycles (two rows, ns per
#            connect);
#   startup  `true` against `paddock run -- true`, STARTUP_PAIRS pairs (the
#            phases of a start: bench/startup.sh, run after the table with
#            STARTUP_TRACE=1, as root with perf);
#
# and, where both make and git ran, "make + git": their sum round by round.
# With HOGS=N, every run has N busy loops beside it (`while :; do :; done`;
# 2 is one per core here), and only make and git run unless WORK says
# otherwise: the "under contention" figure.
#
# Where the kernel groups each session's processes for the scheduler
# (autogroup, /proc/sys/kernel/sched_autogroup_enabled), the busy loops,
# which run in the script's session as paddock itself does, get one CPU
# share and the workload's session another. With ONE_GROUP=1 (root, the
# cgroup v1 cpu controller at /sys/fs/cgroup/cpu) the script first moves
# itself into a cpu cgroup of its own, in which every process is scheduled
# as one group, as where autogroup is off or a cgroup holds the session:
# the workload's processes then compete with the busy loops one by one.
#
# Knobs (environment):
#   PAIRS=5          rounds; each runs every workload in every mode once
#   WORK="make gobuild git conn startup" (HOGS=0) or "make git" (HOGS>0)
#   HOGS=0           busy loops beside every run
#   PADDOCK=         a paddock binary to use (default: built from this tree)
#   OTHER=           a second paddock binary, run as a third mode ("other"):
#                    the table then also has paddock against it
#   FLOOR=           1: bench/floor.c as a mode ("floor"), with FLOOR_EXEC=1
#                    and FLOOR_WALL=1: the same calls trapped as paddock run
#                    traps (signals, execs, the default wall's connects and
#                    opens), each answered CONTINUE without a look: the
#                    least any notify supervisor costs a workload here;
#                    like paddock, it runs in the script's session and
#                    starts the workload in a session of its own
#   HOGS_APART=      1: each busy loop in a session of its own (setsid), as
#                    a build in another terminal runs beside a desktop
#                    agent; by default they run in the script's session,
#                    where paddock's supervisor (and the floor's) runs too
#   MAKE_FILES=300 GIT_COMMITS=60 CONN_N=5000 STARTUP_PAIRS=30 GOBUILD=own
#   ONE_GROUP=       1: every process in one scheduling group (above)
#   OUT=bench/out    where the binaries, samples and work.md go
#
# Needs: go, gcc, make, git, python3, setsid (util-linux). Run from anywhere, as root or not.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"

PAIRS=${PAIRS:-5}
HOGS=${HOGS:-0}
if ((HOGS > 0)); then WORK=${WORK:-make git}; else WORK=${WORK:-make gobuild git conn startup}; fi
MAKE_FILES=${MAKE_FILES:-300}
GIT_COMMITS=${GIT_COMMITS:-60}
CONN_N=${CONN_N:-5000}
STARTUP_PAIRS=${STARTUP_PAIRS:-30}
GOBUILD=${GOBUILD:-own}
for w in $WORK; do
	case $w in
	make | gobuild | git | conn | startup) ;;
	*) die "WORK has $w: want some of make gobuild git conn startup" ;;
	esac
done
[[ $GOBUILD == own || $GOBUILD == all ]] || die "GOBUILD=$GOBUILD: want own or all"
[[ $PAIRS =~ ^[1-9][0-9]*$ ]] || die "PAIRS=$PAIRS: want a whole number of rounds, 1 or more"
[[ $HOGS =~ ^[0-9]+$ ]] || die "HOGS=$HOGS: want a whole number of busy loops, 0 or more"
for tool in go gcc make git python3 setsid; do
	command -v "$tool" >/dev/null || die "$tool not found"
done

if [[ -z ${PADDOCK:-} ]]; then
	echo "building paddock and connloop ..." >&2
	CGO_ENABLED=0 go build -o "$out/paddock" ./cmd/paddock
	PADDOCK=$out/paddock
fi
[[ -x $PADDOCK ]] || die "PADDOCK=$PADDOCK is not an executable"
[[ -z ${OTHER:-} || -x $OTHER ]] || die "OTHER=$OTHER is not an executable"
gcc -O2 -Wall -pthread -o "$out/connloop" bench/connloop.c
truebin=$(type -P true) || die "no true binary on PATH"
modes=(bare paddock)
[[ -n ${OTHER:-} ]] && modes+=(other)
if [[ -n ${FLOOR:-} ]]; then
	[[ $(uname -m) == x86_64 ]] || die "FLOOR=1: bench/floor.c traps the x86_64 table only"
	gcc -O2 -Wall -o "$out/floor" bench/floor.c
	modes+=(floor)
fi

tmp=$(mktemp -d)
trap 'stop_hogs; rm -rf "$tmp"; leave_group' EXIT
group=
leave_group() { :; }
if [[ -n ${ONE_GROUP:-} ]]; then
	cpu=/sys/fs/cgroup/cpu
	[[ -w $cpu/cgroup.procs ]] || die "ONE_GROUP=1 needs root and the cgroup v1 cpu controller at $cpu (on cgroup v2: run with sysctl kernel.sched_autogroup_enabled=0 instead)"
	group=$cpu/paddock-bench-$$
	mkdir "$group" || die "cannot make the cpu cgroup $group"
	leave_group() {
		echo "$BASHPID" >"$cpu/cgroup.procs"
		rmdir "$group"
	}
	echo "$BASHPID" >"$group/cgroup.procs" || die "cannot move into $group"
fi
journal=$tmp/j.jsonl

# run_mode MODE CMD...: CMD bare, or under the paddock binary of MODE.
# Bare, CMD runs in a session of its own, as paddock starts its agent when
# it has no terminal: where the kernel groups each session's processes for
# the scheduler (autogroup, /proc/sys/kernel/sched_autogroup_enabled), a
# session is a group with a CPU share of its own, and a bare run in the
# script's session would share the busy loops' group while paddock's agent
# did not.
run_mode() {
	local mode=$1 bin=$PADDOCK
	shift
	[[ $mode == other ]] && bin=$OTHER
	case $mode in
	bare) setsid -w "$@" ;;
	floor) FLOOR_EXEC=1 FLOOR_WALL=1 "$out/floor" "$@" ;;
	*) "$bin" run --no-notify-stderr --log-level error --journal "$journal" -- "$@" ;;
	esac
}
"$PADDOCK" run --no-notify-stderr --log-level error --journal "$journal" -- true ||
	die "paddock run -- true failed: every paddock number would be a bare one"

# The go build's GOCACHE: primed once (GOBUILD=own) with everything but
# this module's own packages.
gen_gobuild() {
	mkdir "$tmp/gocache"
	[[ $GOBUILD == own ]] || return 0
	echo "priming a GOCACHE with the standard library and the dependencies ..." >&2
	local deps
	deps=$(go list -deps ./cmd/paddock | grep -v "^$(go list -m)") || die "go list failed"
	# shellcheck disable=SC2086
	GOCACHE=$tmp/gocache go build $deps || die "priming the GOCACHE failed"
}

# Each workload's label and unit, in the table's order.
labels=$tmp/labels.tsv
: >"$labels"
for w in $WORK; do
	case $w in
	make)
		make_tree "$tmp/make" "$MAKE_FILES"
		printf 'make\tmake -j2, %s C files and a link\ts\n' "$MAKE_FILES" >>"$labels"
		;;
	gobuild)
		gen_gobuild
		if [[ $GOBUILD == own ]]; then
			printf 'gobuild\tgo build ./cmd/paddock, its own packages (GOCACHE primed with std and deps)\ts\n' >>"$labels"
		else
			printf 'gobuild\tgo build -a ./cmd/paddock, empty GOCACHE\ts\n' >>"$labels"
		fi
		;;
	git) printf 'git\tgit, %s commits (bench/gitwork.sh)\ts\n' "$GIT_COMMITS" >>"$labels" ;;
	conn)
		printf 'conn_tcp\tloopback TCP connect+accept+close, %s cycles\tus/connect\n' "$CONN_N" >>"$labels"
		printf 'conn_unix\tunix pathname-socket connect+accept+close, %s cycles\tus/connect\n' "$CONN_N" >>"$labels"
		;;
	startup) printf 'startup\tstartup, true (%s pairs)\tms\n' "$STARTUP_PAIRS" >>"$labels" ;;
	esac
done
[[ " $WORK " == *" make "* && " $WORK " == *" git "* ]] &&
	printf 'make+git\tmake + git, their sum in each round\ts\n' >>"$labels"

samples=$out/work.tsv
: >"$samples"
rec() { printf '%s\t%s\t%s\t%s\n' "$round" "$1" "$2" "$3" >>"$samples"; }

# timed W MODE CMD...: records CMD's wall time in seconds as W's sample.
timed() {
	local w=$1 mode=$2 t0
	shift 2
	now
	t0=$now
	run_mode "$mode" "$@" >/dev/null || die "$w ($mode) failed"
	now
	rec "$w" "$mode" "$(python3 -c "print(($now - $t0) / 1e9)")"
}

# one W MODE: runs workload W once in MODE and records its sample(s).
one() {
	local w=$1 mode=$2 line
	case $w in
	make) timed make "$mode" make -s -B -j2 -C "$tmp/make" ;;
	gobuild)
		local cache=$tmp/gocache.run flags=()
		rm -rf "$cache"
		cp -a "$tmp/gocache" "$cache"
		[[ $GOBUILD == all ]] && flags=(-a)
		timed gobuild "$mode" env GOCACHE="$cache" go build "${flags[@]}" -o /dev/null ./cmd/paddock
		;;
	git) timed git "$mode" sh bench/gitwork.sh "$GIT_COMMITS" ;;
	conn)
		line=$(run_mode "$mode" "$out/connloop" "$CONN_N" both) || die "connloop ($mode) failed"
		local kind
		for kind in tcp unix; do
			local l
			l=$(grep "kind=$kind " <<<"$line") || die "connloop ($mode) printed no $kind line: $line"
			rec "conn_$kind" "$mode" "$(python3 -c "print($(field ns_per_connect "$l") / 1e3)")"
		done
		;;
	startup)
		local t0
		now
		t0=$now
		run_mode "$mode" "$truebin" || die "true ($mode) failed"
		now
		local us=$(((now - t0) / 1000))
		rec startup "$mode" "$(printf '%d.%03d' $((us / 1000)) $((us % 1000)))"
		;;
	esac
}

load_start=$(loadavg)
((HOGS > 0)) && start_hogs "$HOGS"
echo "$PAIRS rounds of: ${WORK/startup/} (modes: ${modes[*]}; $HOGS busy loops beside)" >&2
for ((round = 0; round < PAIRS; round++)); do
	rec load - "$(cut -d' ' -f1 /proc/loadavg)"
	echo "round $((round + 1)) of $PAIRS, load $(loadavg)" >&2
	for w in $WORK; do
		[[ $w == startup ]] && continue
		for mode in $(order "$round" "${modes[@]}"); do one "$w" "$mode"; done
	done
done
if [[ " $WORK " == *" startup "* ]]; then
	echo "startup: $STARTUP_PAIRS pairs, load $(loadavg)" >&2
	for ((round = PAIRS; round < PAIRS + STARTUP_PAIRS; round++)); do
		for mode in $(order "$round" "${modes[@]}"); do one startup "$mode"; done
	done
fi
stop_hogs
load_end=$(loadavg)

title="$(cpu_model), $(nproc) CPUs, Linux $(uname -r); $(git log -1 --format=%h 2>/dev/null || echo "?") $(git status --porcelain 2>/dev/null | grep -q . && echo "(with changes)"); $(date '+%F %H:%M'); $PAIRS rounds, $HOGS busy loops beside${HOGS_APART:+ (each in a session of its own)}${group:+, all in one cpu cgroup}, sched_autogroup_enabled $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo "?"); load average $load_start at start, $load_end at end; A/B: the modes compared (bare, paddock${OTHER:+, other = $OTHER}${FLOOR:+, floor = bench/floor.c with exec and the wall trapped})."
python3 bench/table.py "$samples" "$labels" "$title" | tee "$out/work.md"
echo "raw samples: $samples; table: $out/work.md" >&2
if [[ -n ${STARTUP_TRACE:-} && " $WORK " == *" startup "* ]]; then
	echo "startup phases (bench/startup.sh 20):" >&2
	bench/startup.sh 20
fi
