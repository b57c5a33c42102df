#!/usr/bin/env bash
# bench/all.sh: every benchmark of docs/perf.md in one go, one after the
# other (about 5 minutes on the project's 2-core machine): the kill loops,
# fork+exec and startup (run.sh), the git and go-build workloads (real.sh),
# make, go build, git, connects and startup side by side (work.sh),
# the refusal storm (storm.sh), the supervisor's memory (memory.sh) and the
# startup phases (startup.sh), group signals (group.sh) and tini (tini.sh). Each script's own knobs pass through the
# environment (PAIRS, BACKEND, OUT, RUNS, ...); run it as root, on a machine
# doing nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
for script in run.sh real.sh work.sh storm.sh memory.sh startup.sh group.sh tini.sh; do
	echo "=== bench/$script ($(date +%T), load $(loadavg))"
	"bench/$script"
done
