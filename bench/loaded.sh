#!/usr/bin/env bash
# bench/loaded.sh [RUNS] [HOGS]: the README's test command, `go test
# -count=1 ./...`, RUNS times (default 10) beside HOGS busy loops (default
# 2, one per core of the project's machines), as a new user on a busy
# machine would run it. Prints one line per run (its exit status, wall
# time, load average, and each package that did not pass) and a closing
# "N passed, N failed" line; each run's whole output is in
# bench/out/loaded-N.txt. The hogs end with the script.
# Run from anywhere.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
runs=${1:-10} hogs=${2:-2}
trap stop_hogs EXIT
start_hogs "$hogs"
passed=0 failed=0
for i in $(seq "$runs"); do
	start=$EPOCHREALTIME
	go test -count=1 ./... >"$out/loaded-$i.txt" 2>&1
	rc=$?
	wall=$(echo "$EPOCHREALTIME - $start" | bc)
	load=$(cut -d' ' -f1-3 /proc/loadavg)
	bad=$(grep -E '^(FAIL|---.FAIL|panic:)' "$out/loaded-$i.txt" | grep -v '^FAIL$' | tr '\n' ';')
	if [[ $rc == 0 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	printf 'run %d: exit %d, %.0f s, load %s%s\n' "$i" "$rc" "$wall" "$load" "${bad:+, $bad}"
done
echo "loaded: $passed passed, $failed failed"
