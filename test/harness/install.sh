#!/usr/bin/env bash
# install.sh [PACKAGE@VERSION...]: npm-installs the harnesses the harness
# suite drives (every line of pins.txt beside this script, or those named)
# into the cache, each into a directory of its own, CACHE/PACKAGE@VERSION,
# doing nothing for one that is already there.
#
# CACHE is $PADDOCK_HARNESS_CACHE, else /var/cache/paddock/harness for root
# (the suite runs the harnesses as nobody, who cannot enter /root), else
# ${XDG_CACHE_HOME:-$HOME/.cache}/paddock/harness. The tests compute the
# same path (harness_test.go) and run this script when a harness is missing.
# Everything installed is readable and executable by every user.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [[ -n ${PADDOCK_HARNESS_CACHE:-} ]]; then
  cache=$PADDOCK_HARNESS_CACHE
elif [[ $(id -u) == 0 ]]; then
  cache=/var/cache/paddock/harness
else
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/paddock/harness
fi
if (($# == 0)); then
  mapfile -t specs < <(grep -v '^[[:space:]]*\(#\|$\)' "$here/pins.txt")
else
  specs=("$@")
fi
command -v npm >/dev/null || { echo "install.sh: npm is not installed" >&2; exit 1; }
mkdir -p "$cache"
chmod a+rx "$cache"
# One installer at a time: CI's and a test's, or two test packages'.
exec 9>"$cache/.lock"
flock 9
for spec in "${specs[@]}"; do
  if [[ ! $spec =~ ^(@[a-z0-9._-]+/)?[a-z0-9._-]+@[0-9][0-9A-Za-z.+-]*$ ]]; then
    echo "install.sh: $spec is not PACKAGE@VERSION with an exact version (as in pins.txt)" >&2
    exit 2
  fi
  dir=$cache/$spec
  [[ -f $dir/.installed ]] && continue
  mkdir -p "$(dirname "$dir")"
  chmod a+rx "$(dirname "$dir")"
  tmp=$(mktemp -d "$dir.tmp.XXXXXX")
  echo "install.sh: npm install $spec into $dir" >&2
  if ! npm install --prefix "$tmp" --no-audit --no-fund --no-save --loglevel=error "$spec" >&2; then
    rm -rf "$tmp"
    echo "install.sh: npm install $spec failed" >&2
    exit 1
  fi
  chmod -R a+rX "$tmp"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  touch "$dir/.installed"
done
