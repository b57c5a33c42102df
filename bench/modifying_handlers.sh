#!/usr/bin/env bash
# bench/modifying_handlers.sh: why CPython's
# test_signal.StressTest.test_stress_modifying_handlers fails alone under the
# seccomp backend (docs/limits.md, after "A signal to oneself can fail with
# EINTR"). Three measurements, each line printed as it comes:
#   1. bench/modifying_handlers.py (the test with counts), NSENT raises, bare,
#      under --backend seccomp and under --backend ptrace, RUNS times each.
#      With perf and the signal tracepoints: SIGUSR1 raises queued (found the
#      handler installed), discarded at once (found SIG_IGN), and taken off the
#      queue (signal_deliver).
#   2. the same, bare, with the raise delayed by spinning DELAY_NS after the
#      GIL is released: the cost of a trapped call without paddock.
#   3. bench/sigign_race.c: the race without Python, for pauses after
#      installing the handler of 0-4 us.
#
# Run from anywhere, as root (perf):  bench/modifying_handlers.sh
# Knobs: RUNS=2 NSENT=1000 OUT=bench/out
# Needs: go, gcc, /usr/bin/python3; perf for the kernel-side counts.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
runs=${RUNS:-2}
export NSENT=${NSENT:-1000}
py=/usr/bin/python3
[[ -x $py ]] || die "$py not found"
command -v gcc >/dev/null || die "gcc not found"
CGO_ENABLED=0 go build -o "$out/paddock" ./cmd/paddock
gcc -O2 -Wall -pthread -o "$out/sigign_race" bench/sigign_race.c
gcc -O2 -Wall -pthread -shared -fPIC -o "$out/sigign_race.so" bench/sigign_race.c
export RACE_SO=$out/sigign_race.so
journal=$(mktemp -d)
trap 'rm -rf "$journal"' EXIT

perf_ok=
if command -v perf >/dev/null && perf stat -e signal:signal_deliver true >/dev/null 2>&1; then
	perf_ok=1
fi

# counted CMD...: run CMD (bounded), print its own line and, with perf, the
# kernel's SIGUSR1 counts.
counted() {
	if [[ -z $perf_ok ]]; then
		timeout 600 "$@"
		return
	fi
	local err=$journal/perf.err line
	line=$(timeout 600 perf stat -x, -o "$err" \
		-e signal:signal_generate --filter 'sig==10 && result==0' \
		-e signal:signal_generate --filter 'sig==10 && result==1' \
		-e signal:signal_deliver --filter 'sig==10' -- "$@")
	mapfile -t c < <(grep -E '^[0-9]+,' "$err" | cut -d, -f1)
	echo "$line queued=${c[0]} discarded=${c[1]} taken_off=${c[2]}"
}

body="$py $root/bench/modifying_handlers.py"
echo "1. the test with counts, NSENT=$NSENT"
for ((i = 1; i <= runs; i++)); do
	echo "bare:    $(counted bash -c "$body")"
	for b in seccomp ptrace; do
		echo "$b: $(counted "$out/paddock" run --backend "$b" --log-level error --no-notify-stderr \
			--journal "$journal/$b.jsonl" -- bash -c "$body")"
	done
done
echo "2. bare, the raise delayed after the GIL is released"
for d in 0 5000 10000 20000 50000; do
	echo "delay ${d}ns: $(DELAY_NS=$d counted $py "$root/bench/modifying_handlers.py")"
done
echo "3. without Python (bench/sigign_race.c), 2000 raises"
for g in 0 500 1000 2000 4000; do
	echo "$(counted "$out/sigign_race" 2000 "$g" 4000)"
done
