#!/usr/bin/env bash
# bench/cpython.sh: CPython's own regression tests as a compatibility
# yardstick (issue 20): each suite bare, under `paddock run --backend
# seccomp` and under `--backend ptrace`, with the per-test results compared.
# The agent root is a shell (bash -c), as a harness would run it: with
# python3 itself as the root, tests whose children signal their parent are
# refused by the lifeline rule.
#
# Run from anywhere:  bench/cpython.sh [SUITE...]
#   default suites: test.test_signal test.test_subprocess test.test_os
#                   test.test_asyncio.test_subprocess
# Needs: Debian's libpython3.11-testsuite (apt-get install -y
# libpython3.11-testsuite; done here when missing and root), /usr/bin/python3.
# Writes bench/out/cpython-{bare,seccomp,ptrace}.txt and prints, per run,
# the counts and every test whose result differs from bare.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${OUT:-$root/bench/out}
mkdir -p "$out"
# shellcheck source=bench/lib.sh
source "$root/bench/lib.sh"
py=/usr/bin/python3
[[ -x $py ]] || die "$py not found"
if ! $py -c 'import test.test_signal' 2>/dev/null; then
	[[ $(id -u) == 0 ]] || die "CPython's test suite not found (apt-get install -y libpython3.11-testsuite)"
	apt-get install -y libpython3.11-testsuite >/dev/null || die "apt-get install -y libpython3.11-testsuite failed"
fi
suites=("$@")
[[ ${#suites[@]} -gt 0 ]] || suites=(test.test_signal test.test_subprocess test.test_os test.test_asyncio.test_subprocess)
CGO_ENABLED=0 go build -o "$out/paddock" ./cmd/paddock
journal=$(mktemp -d)
trap 'rm -rf "$journal"' EXIT
cmd="cd /tmp && $py -m unittest -v ${suites[*]} 2>&1"

# results FILE: "name result" lines of a unittest -v log, sorted.
results() {
	grep -E '^[a-zA-Z_0-9]+ \(.*\) \.\.\. ' "$1" | sed -E 's/^([^ ]+ \([^)]*\)).* \.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success).*/\1 \2/' | sort
}

bash -c "$cmd" >"$out/cpython-bare.txt" || true
for b in seccomp ptrace; do
	"$out/paddock" run --backend "$b" --log-level error --no-notify-stderr --journal "$journal/$b.jsonl" -- bash -c "$cmd" >"$out/cpython-$b.txt" || true
done
for b in bare seccomp ptrace; do
	echo "$b: $(tail -n 3 "$out/cpython-$b.txt" | grep -E '^(OK|FAILED)' || echo 'no summary')"
done
for b in seccomp ptrace; do
	echo "differences from bare, $b:"
	diff <(results "$out/cpython-bare.txt") <(results "$out/cpython-$b.txt") | grep '^[<>]' || echo "  none"
done
