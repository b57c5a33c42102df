#!/bin/sh
# forkexec.sh [N]: N fork+exec of /bin/true (default 1500), one after the
# other, the workload bench/run.sh times bare and under paddock. It traps no
# signal syscalls of its own, so under paddock it measures the cost of the
# filter on an exec-heavy process, not the decision path.
n=${1:-1500}
i=0
while [ "$i" -lt "$n" ]; do
	/bin/true
	i=$((i + 1))
done
