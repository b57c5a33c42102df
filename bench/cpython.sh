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
# the counts and every test whose result differs from bare
# (COMPARE_ONLY=1: compare the logs already there, run nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
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

# results FILE: "name result" lines of a unittest -v log, sorted (a test
# with a docstring, or one that prints, has its result on a later line).
results() {
	$py - "$1" <<'PY'
import re, sys
name, out = None, []
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"^(test\w* \([\w.]+\))", line)
    if m:
        name = m.group(1)
    r = re.search(r" \.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)", line)
    alone = line.strip() in ("ok", "FAIL", "ERROR", "expected failure", "unexpected success")
    if name and (r or alone):
        # A test that prints has its result on a line of its own.
        out.append(name + " " + (r.group(1) if r else line.strip()))
        name = None
print("\n".join(sorted(out)))
PY
}

if [[ -z ${COMPARE_ONLY:-} ]]; then
bash -c "$cmd" >"$out/cpython-bare.txt" || true
for b in seccomp ptrace; do
	"$out/paddock" run --backend "$b" --log-level error --no-notify-stderr --journal "$journal/$b.jsonl" -- bash -c "$cmd" >"$out/cpython-$b.txt" || true
done
fi
for b in bare seccomp ptrace; do
	echo "$b: $(tail -n 3 "$out/cpython-$b.txt" | grep -E '^(OK|FAILED)' || echo 'no summary')"
done
for b in seccomp ptrace; do
	echo "differences from bare, $b:"
	{ diff <(results "$out/cpython-bare.txt") <(results "$out/cpython-$b.txt") || true; } | grep '^[<>]' || echo "  none"
done
