#!/usr/bin/env bash
# The paddock GitHub Action's install step (action.yml): downloads the
# release tarball for this runner and the release's SHA256SUMS, checks the
# tarball against it, unpacks it under $RUNNER_TEMP, puts paddock on PATH
# for the steps after this one, and sets the output "path" to the binary.
#
# Inputs, from the environment: INPUT_VERSION (v0.1.0), INPUT_DOWNLOAD_URL
# (the releases' base: BASE/TAG/paddock_VERSION_linux_ARCH.tar.gz and
# BASE/TAG/SHA256SUMS; curl fetches it, so file:///dir works too).
set -euo pipefail

fail() {
  echo "::error title=paddock install::$*"
  exit 1
}

version=${INPUT_VERSION:-}
if [[ ! $version =~ ^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  fail "version input \"$version\": want a paddock release such as v0.1.0 (see https://github.com/paddock-dev/paddock/releases)"
fi
tag=v${version#v} file_version=${version#v}
base=${INPUT_DOWNLOAD_URL:-https://github.com/paddock-dev/paddock/releases/download}
base=${base%/}
if [[ ! $base =~ ^(https|file)://[^[:space:]]+$ ]]; then
  fail "download-url input \"${base//[$'\n\r']/\\n}\": want an https:// or file:// URL without spaces (the releases' base, as https://github.com/paddock-dev/paddock/releases/download)"
fi

[[ $(uname -s) == Linux ]] || fail "paddock runs on Linux runners only, not on $(uname -s)"
case $(uname -m) in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) fail "no paddock release for this runner's architecture $(uname -m): there are linux amd64 (x86_64) and arm64 (aarch64) ones" ;;
esac
command -v curl >/dev/null || fail "curl is needed to download paddock; install it in an earlier step"

tarball=paddock_${file_version}_linux_${arch}.tar.gz
dir=${RUNNER_TEMP:?RUNNER_TEMP is not set: this runs as a step of a GitHub Actions job}/paddock-$file_version-$arch
rm -rf "$dir"
mkdir -p "$dir"
for f in "$tarball" SHA256SUMS; do
  curl -fsSL --proto =https,file --proto-redir =https --retry 3 -o "$dir/$f" -- "$base/$tag/$f" || fail "download $base/$tag/$f failed (is $tag a paddock release, and download-url right?)"
done

# The tarball's line of SHA256SUMS, and nothing else, decides.
want=$(awk -v f="$tarball" '$2 == f || $2 == "*" f { print $1 }' "$dir/SHA256SUMS")
[[ -n $want ]] || fail "$base/$tag/SHA256SUMS has no line for $tarball"
got=$(sha256sum "$dir/$tarball" | awk '{ print $1 }')
[[ $got == "$want" ]] || fail "checksum mismatch for $tarball: SHA256SUMS says $want, the download hashes to $got; not installed"
echo "$tarball: SHA-256 $got, as $tag's SHA256SUMS says"

tar -xzf "$dir/$tarball" -C "$dir"
bindir=$dir/${tarball%.tar.gz}
"$bindir/paddock" version
echo "$bindir" >>"${GITHUB_PATH:?GITHUB_PATH is not set}"
echo "path=$bindir/paddock" >>"${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
