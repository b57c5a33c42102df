"""bench/table.py SAMPLES LABELS [TITLE]: the markdown table of a
side-by-side benchmark run (bench/work.sh writes both files).

SAMPLES has one "round<TAB>workload<TAB>mode<TAB>value" line per timed run,
the modes of a round run side by side (in A B, B A order); the workload
"load" records the 1-minute load average at each round's start (mode "-").
LABELS has one "workload<TAB>label<TAB>unit" line per workload, in the
order of the table; a label's workload "a+b" is the sum, round by round, of
workloads a and b.

Each row compares a mode with a base mode ("bare", or "other" or
"floor" for "paddock" when a run has an "other" binary or the floor
supervisor): the medians of each, their
min-max spreads and the median of the rounds' own ratios (mode over base
in the same round, so the machine's drift between rounds cancels) with
its quartiles.
"""
import statistics
import sys


def quartiles(xs):
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else xs * 3
    return q[0], statistics.median(xs), q[2]


def main(samples, labels, title=""):
    vals = {}  # (workload, mode) -> {round: value}
    loads = []
    for line in open(samples):
        rnd, w, mode, v = line.rstrip("\n").split("\t")
        if w == "load":
            loads.append(float(v))
            continue
        vals.setdefault((w, mode), {})[int(rnd)] = float(v)
    rows = [line.rstrip("\n").split("\t") for line in open(labels) if line.strip()]
    for w, _, _ in rows:
        if "+" in w:  # a sum of workloads, round by round
            parts = w.split("+")
            for mode in {m for (x, m) in vals if x == parts[0]}:
                per = [vals.get((p, mode), {}) for p in parts]
                common = set.intersection(*(set(p) for p in per))
                vals[(w, mode)] = {r: sum(p[r] for p in per) for r in common}
    modes = sorted({m for (_, m) in vals} - {"bare"}, key=lambda m: (m != "paddock", m))
    pairs = [("bare", m) for m in modes]
    for base in ("other", "floor"):
        if base in modes and "paddock" in modes:
            pairs.append((base, "paddock"))
    if title:
        print(title)
        print()
    if loads:
        print("1-minute load average at the rounds' starts: %.2f to %.2f (median %.2f)"
              % (min(loads), max(loads), statistics.median(loads)))
        print()
    print("| workload | unit | A | B | A median | B median | B/A (median of rounds) | rounds' quartiles | B faster in | A spread | B spread |")
    print("|---|---|---|---|---:|---:|---:|---|---|---|---|")
    for w, label, unit in rows:
        for a, b in pairs:
            va, vb = vals.get((w, a)), vals.get((w, b))
            if not va or not vb:
                continue
            common = sorted(set(va) & set(vb))
            rat = sorted(vb[r] / va[r] for r in common if va[r])
            if not rat:
                continue
            q1, med, q3 = quartiles(rat)
            sp = lambda xs: "%.2f-%.2f" % (min(xs), max(xs))
            print("| %s | %s | %s | %s | %.2f | %.2f | %.3fx | %.3f-%.3f | %d of %d | %s | %s |" % (
                label, unit, a, b, statistics.median(va.values()), statistics.median(vb.values()),
                med, q1, q3, sum(vb[r] < va[r] for r in common), len(common),
                sp(va.values()), sp(vb.values())))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: bench/table.py SAMPLES LABELS [TITLE]")
    main(*sys.argv[1:])
