#!/usr/bin/env bash
# run.sh: boots Debian's current kernel (the sid archive's cloud kernel,
# BPF LSM on by default) in qemu without KVM, with an initramfs holding
# busybox, the spike and bench/killloop.c, and prints what init.sh ran.
# Needs root for apt-get (qemu-system-x86, busybox-static, clang, bpftool,
# libbpf-dev, gcc). Writes only under $OUT (default: a new temporary dir).
# REPEAT=N: how many refusing members the fourth experiment runs (300).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
need=()
for p in qemu-system-x86_64:qemu-system-x86 busybox:busybox-static clang:clang bpftool:bpftool gcc:gcc cpio:cpio; do
	command -v "${p%%:*}" >/dev/null || need+=("${p##*:}")
done
[[ -e /usr/include/bpf/bpf_helpers.h ]] || need+=(libbpf-dev)
if ((${#need[@]})); then apt-get install -y "${need[@]}" >/dev/null; fi

# The kernel: sid's cloud image, found through a private apt state so the
# host's sources stay as they are, from the Debian archive this machine's apt
# already uses (the URI of its main suite's packages, not the security or
# updates suites'), so that no archive's host name is written here.
archive=$(apt-get indextargets --format '$(TARGET_OF) $(REPO_URI) $(RELEASE)' 'Created-By: Packages' |
	awk '$1 == "deb" && $3 !~ /-/ && $2 !~ /security/ {print $2; exit}')
if [[ -z $archive ]]; then
	echo "run.sh: this machine's apt sources name no Debian archive (apt-get indextargets lists none): add one, then run apt-get update" >&2
	exit 1
fi
apt=(-o Dir::Etc::SourceList="$out/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o Dir::State::Lists="$out/lists" -o Dir::Cache="$out/cache")
mkdir -p "$out/lists/partial" "$out/cache/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $archive sid main" >"$out/sources.list"
apt-get "${apt[@]}" update >/dev/null
ver=$(apt-cache "${apt[@]}" depends linux-image-cloud-amd64 | sed -n 's/.*Depends: linux-image-\(.*-cloud-amd64\)$/\1/p' | head -1)
(cd "$out" && apt-get "${apt[@]}" download "linux-binary-$ver" >/dev/null 2>&1)
dpkg-deb -x "$out"/linux-binary-"$ver"_*.deb "$out/kernel"
vmlinuz=$(find "$out/kernel" -name vmlinuz | head -1)

# The programs, built against this host's BTF (CO-RE relocates them for the
# VM's kernel at load).
bpftool btf dump file /sys/kernel/btf/vmlinux format c >"$out/vmlinux.h"
clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I"$out" -c "$here/bpf/spike.bpf.c" -o "$out/spike.bpf.o"
(cd "$here" && CGO_ENABLED=0 go build -o "$out/spike" .)

init=$out/initrd
rm -rf "$init" && mkdir -p "$init"/{bin,proc,sys,dev,tmp,root}
cp /bin/busybox "$init/bin/"
ln -s busybox "$init/bin/sh"
cp "$here/init.sh" "$init/init"
cp "$out/spike" "$out/spike.bpf.o" "$init/root/"
gcc -O2 -static -o "$init/root/killloop" "$here/../../bench/killloop.c"
(cd "$init" && find . | cpio -o -H newc 2>/dev/null | gzip >"$out/initrd.gz")

echo "kernel $ver; output in $out" >&2
timeout 600 qemu-system-x86_64 -M q35 -cpu max -m 2048 -smp 2 -nographic -no-reboot \
	-kernel "$vmlinuz" -initrd "$out/initrd.gz" -append "console=ttyS0 quiet panic=-1 spike.repeat=${REPEAT:-300}" 2>&1 |
	sed -n '/LSMs: /,$p' | tr -d '\r' | tee "$out/console.txt"
