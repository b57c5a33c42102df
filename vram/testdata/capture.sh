#!/bin/sh
# capture.sh DIR — record what paddock's VRAM detection reads on this machine
# into DIR, in the layout of vram/testdata/hosts/<case>/, so a real host
# becomes a fixture: copy DIR to vram/testdata/hosts/<name>/, note the
# machine and date in testdata/README.md, and add the expected values to
# TestDetectFixtures.
#
# It reads only: nvidia-smi's two queries (the exact ones Detect runs),
# /sys/class/drm (VRAM counters, connector status, driver names), the comm
# names of running processes, and DISPLAY / WAYLAND_DISPLAY. It writes
# nothing outside DIR and changes nothing on the machine.
set -u
out=${1:?usage: capture.sh DIR}
mkdir -p "$out/nvidia-smi" || exit 1

# nvidia-smi: stdout as Detect sees it, and the exit status when not 0.
if command -v nvidia-smi >/dev/null 2>&1; then
	timeout 10 nvidia-smi --query-gpu=index,name,memory.total,memory.used,display_active \
		--format=csv,noheader,nounits >"$out/nvidia-smi/query-gpu.csv" 2>"$out/nvidia-smi/query-gpu.stderr"
	rc=$?
	[ "$rc" -ne 0 ] && echo "$rc" >"$out/nvidia-smi/query-gpu.exit"
	timeout 10 nvidia-smi --query-compute-apps=pid,used_memory \
		--format=csv,noheader,nounits >"$out/nvidia-smi/query-compute-apps.csv" 2>/dev/null
	[ -s "$out/nvidia-smi/query-gpu.stderr" ] || rm -f "$out/nvidia-smi/query-gpu.stderr"
	nvidia-smi -L >"$out/nvidia-smi/list.txt" 2>&1 || true          # for the README, not read by tests
	nvidia-smi --version >"$out/nvidia-smi/version.txt" 2>&1 || true # idem
else
	: >"$out/nvidia-smi/missing"
fi

# /sys/class/drm: regular files only (sysfs links are followed by cp -L).
drm=/sys/class/drm
if [ -d "$drm" ]; then
	ls -l "$drm" >"$out/drm-ls.txt" 2>&1 # for the README, not read by tests
	for card in "$drm"/card[0-9]*; do
		[ -e "$card" ] || continue
		name=${card##*/}
		case $name in
		*-*) # a connector: card0-DP-1
			if [ -r "$card/status" ]; then
				mkdir -p "$out/sys/class/drm/$name"
				cat "$card/status" >"$out/sys/class/drm/$name/status" 2>/dev/null
			fi
			;;
		*) # a card: its driver, vendor, and amdgpu's VRAM counters
			mkdir -p "$out/sys/class/drm/$name/device"
			for f in uevent vendor device product_name mem_info_vram_total mem_info_vram_used; do
				[ -r "$card/device/$f" ] && cat "$card/device/$f" >"$out/sys/class/drm/$name/device/$f" 2>/dev/null
			done
			;;
		esac
	done
fi

# Process names (comm), sorted and de-duplicated: display servers only
# matter by name, and nothing else about the processes is kept.
for f in /proc/[0-9]*/comm; do cat "$f" 2>/dev/null; done | sort -u >"$out/comm"

# The two display variables, when set.
: >"$out/env"
[ -n "${DISPLAY:-}" ] && echo "DISPLAY=$DISPLAY" >>"$out/env"
[ -n "${WAYLAND_DISPLAY:-}" ] && echo "WAYLAND_DISPLAY=$WAYLAND_DISPLAY" >>"$out/env"

{
	echo "captured: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "kernel: $(uname -sr)"
} >"$out/captured.txt"
echo "captured into $out"
