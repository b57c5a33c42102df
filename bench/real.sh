#!/usr/bin/env bash
# bench/real.sh: the two real-work workloads of issue 8, each run bare and
# under `paddock run` alternately (A B A B ...), medians and spreads printed
# as a markdown table:
#   git:   a script makes a git repository with 60 commits (an agent's rhythm:
#          many short processes, file writes, execs), also under the floor
#          supervisor of bench/floor.c with exec trapped (x86_64);
#   build: `go build -a` of this repository with a fresh GOCACHE (a real build).
# Knobs: PAIRS_GIT=5, PAIRS_BUILD=3, BACKEND=auto, OUT=bench/out.
# Needs: go, git, python3. Run from anywhere, as root or not.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${OUT:-$root/bench/out}
mkdir -p "$out"
PAIRS_GIT=${PAIRS_GIT:-5}
PAIRS_BUILD=${PAIRS_BUILD:-3}
BACKEND=${BACKEND:-auto}
command -v git >/dev/null || { echo "bench/real.sh: git not found" >&2; exit 1; }

CGO_ENABLED=0 go build -o "$out/paddock" ./cmd/paddock
pd=("$out/paddock" run --backend "$BACKEND" --no-notify-stderr --log-level error --journal "$out/real.jsonl" --)
samples=$out/real.tsv
: >"$samples"

# The git workload: 60 commits (bench/gitwork.sh).
gitwork=$root/bench/gitwork.sh

timed() { # timed NAME MODE CMD...: records seconds
	local name=$1 mode=$2
	shift 2
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null
	t1=$(date +%s%N)
	printf '%s\t%s\t%s\n' "$name" "$mode" "$(python3 -c "print(($t1-$t0)/1e9)")" >>"$samples"
}

# The floor supervisor (bench/floor.c) with exec trapped runs the git
# workload too, as the least any notify supervisor of exec costs (x86_64).
floor=()
if [[ $(uname -m) == x86_64 ]] && command -v gcc >/dev/null; then
	gcc -O2 -Wall -o "$out/floor" bench/floor.c
	floor=(env FLOOR_EXEC=1 "$out/floor")
fi

echo "git: $PAIRS_GIT rounds of 60 commits, bare / paddock${floor:+ / floor} ..." >&2
for ((i = 0; i < PAIRS_GIT; i++)); do
	timed git bare sh "$gitwork"
	timed git paddock "${pd[@]}" sh "$gitwork"
	if [[ ${#floor[@]} -gt 0 ]]; then
		timed git floor "${floor[@]}" sh "$gitwork"
	fi
done

echo "build: $PAIRS_BUILD pairs of go build -a with a fresh GOCACHE ..." >&2
for ((i = 0; i < PAIRS_BUILD; i++)); do
	for mode in bare paddock; do
		cache=$(mktemp -d)
		if [[ $mode == bare ]]; then
			timed build bare env GOCACHE="$cache" go build -a -o /dev/null ./cmd/paddock
		else
			timed build paddock "${pd[@]}" env GOCACHE="$cache" go build -a -o /dev/null ./cmd/paddock
		fi
		rm -rf "$cache"
	done
done

python3 - "$samples" "$BACKEND" <<'PY'
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    w, m, v = line.split("\t")
    vals.setdefault((w, m), []).append(float(v))
print("backend %s; load average %s" % (sys.argv[2], open("/proc/loadavg").read().split()[0]))
print("| workload | bare median s | paddock median s | ratio | bare spread | paddock spread | target |")
print("|---|---:|---:|---:|---|---|---|")
for w, label, target in [("git", "git repository, 60 commits", "<= 1.05x"), ("build", "go build -a ./cmd/paddock, fresh GOCACHE", "<= 1.02x")]:
    if (w, "bare") not in vals:
        continue
    b, p = statistics.median(vals[(w, "bare")]), statistics.median(vals[(w, "paddock")])
    sp = lambda xs: "%.2f-%.2f" % (min(xs), max(xs))
    print("| %s | %.2f | %.2f | %.3fx | %s | %s | %s |" % (label, b, p, p / b, sp(vals[(w, "bare")]), sp(vals[(w, "paddock")]), target))
    if (w, "floor") in vals:
        f = statistics.median(vals[(w, "floor")])
        print("| %s under the floor supervisor, exec trapped (\"paddock\" column: the floor) | %.2f | %.2f | %.3fx | %s | %s | none (reference) |" % (
            label, b, f, f / b, sp(vals[(w, "bare")]), sp(vals[(w, "floor")])))
    pairs = list(zip(vals[(w, "bare")], vals[(w, "paddock")]))
    if len(pairs) >= 5:
        print("")
        print("%s: median of the per-round ratios paddock/bare %.3fx" % (label, statistics.median([p / b for b, p in pairs])))
PY
