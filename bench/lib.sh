# shellcheck shell=bash disable=SC2034 # sourced: its variables are its users'
# bench/lib.sh: shell helpers shared by the benchmark scripts (sourced after
# `cd` to the repository root, with $root set to it).

# out: where a script writes its reports ($OUT, else bench/out), made here.
out=${OUT:-$root/bench/out}
mkdir -p "$out"

# die MESSAGE: print it, prefixed with the script's name, and exit 1.
die() {
	echo "${0#"$root"/}: $*" >&2
	exit 1
}

# field NAME LINE: the value of NAME=... in a helper's output line.
field() {
	local name=$1 line=$2
	[[ $line =~ (^|[[:space:]])$name=([^[:space:]]+) ]] || die "no $name in output: $line"
	echo "${BASH_REMATCH[2]}"
}

# starttime PID: field 22 of /proc/PID/stat (after the comm).
starttime() {
	local s
	s=$(<"/proc/$1/stat") || return 1
	s=${s##*) }
	read -ra f <<<"$s"
	echo "${f[19]}"
}

# reap PID [SIGNAL]: stop a process this script started and collect it;
# nothing for an empty PID.
reap() {
	[[ -n ${1:-} ]] || return 0
	kill -"${2:-TERM}" "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# survived PID START: whether PID still runs with start time START (the
# same process, not a reused pid).
survived() {
	kill -0 "$1" 2>/dev/null && [[ $(starttime "$1") == "$2" ]]
}

# loadavg: the 1, 5 and 15 minute load averages, for the reports' headers.
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# cpu_model: the CPU's model name, for the reports' headers.
cpu_model() { awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo; }

# now: sets $now to nanoseconds, without forking when bash has EPOCHREALTIME
# (a $(...) would fork a subshell inside the timed interval).
if [[ -n ${EPOCHREALTIME:-} ]]; then
	now() {
		local t=$EPOCHREALTIME
		now=${t/[.,]/}000
	}
else
	now() { now=$(date +%s%N); }
fi

# order I MODE...: prints the modes in the given order on even rounds I and
# reversed on odd ones (A B B A ...), so that a drift in the machine's speed
# over a run does not always favour the same mode.
order() {
	local i=$1
	shift
	if ((i % 2 == 0)); then
		echo "$@"
	else
		local rev=() m
		for m in "$@"; do rev=("$m" "${rev[@]}"); done
		echo "${rev[@]}"
	fi
}

# start_hogs N: starts N busy loops (`while :; do :; done`, one per core of
# the project's machines for N=2), their pids in $hog_pids; stop_hogs ends
# them. A script that starts hogs traps EXIT with stop_hogs. With
# HOGS_APART=1 each runs in a session of its own.
hog_pids=()
start_hogs() {
	local i
	for ((i = 0; i < $1; i++)); do
		if [[ -n ${HOGS_APART:-} ]]; then
			# In a session of its own, made by the loop's own process (a
			# background job leads no group, so setsid(2) succeeds), so
			# that its pid is the loop's.
			python3 -c 'import os
os.setsid()
while True: pass' &
		else
			(while :; do :; done) &
		fi
		hog_pids+=($!)
	done
}
stop_hogs() {
	local p
	for p in "${hog_pids[@]}"; do reap "$p" KILL; done
	hog_pids=()
}

# make_tree DIR N: a C project of N files of one function each, a main
# that calls them all, and a Makefile with the usual pattern rule, made in
# DIR (which must not exist): `make -j2 -C DIR` compiles N+1 files and
# links them (bench/work.sh, bench/trips.sh).
make_tree() {
	local d=$1 n=$2 i
	mkdir "$d" || return 1
	{
		echo 'OBJS = main.o' "$(for ((i = 0; i < n; i++)); do printf 'f%d.o ' "$i"; done)"
		# shellcheck disable=SC2016 # make's variables, not the shell's
		printf 'prog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n%%.o: %%.c\n\t$(CC) -O1 -c -o $@ $<\n'
	} >"$d/Makefile"
	for ((i = 0; i < n; i++)); do
		printf 'int f%d(int x)\n{\n\tint s = 0;\n\tfor (int i = 0; i < x; i++)\n\t\ts += i * %d;\n\treturn s;\n}\n' "$i" "$i" >"$d/f$i.c"
	done
	{
		for ((i = 0; i < n; i++)); do echo "int f$i(int);"; done
		echo 'int main(void)'
		echo '{'
		echo '	int s = 0;'
		for ((i = 0; i < n; i++)); do echo "	s += f$i(3);"; done
		echo '	return s == 0;'
		echo '}'
	} >"$d/main.c"
}
