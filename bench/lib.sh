# bench/lib.sh: shell helpers shared by the benchmark scripts (sourced after
# `cd` to the repository root).

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
