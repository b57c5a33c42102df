#!/bin/sh
# gitwork.sh [COMMITS]: an agent's rhythm in git: a new repository in a
# temp dir, COMMITS commits (default 60), each a new file and an edit of a
# shared one, then the log; many short processes, file writes and execs.
# The workload bench/real.sh and bench/work.sh time bare and under paddock.
set -e
n=${1:-60}
d=$(mktemp -d)
cd "$d"
git init -q .
git config user.email bench@example.com
git config user.name bench
i=1
while [ "$i" -le "$n" ]; do
	echo "line $i" >>shared.txt
	echo "file $i" >"f$i.txt"
	git add -A
	git commit -qm "commit $i"
	i=$((i + 1))
done
git log --oneline | wc -l >/dev/null
cd /
rm -rf "$d"
