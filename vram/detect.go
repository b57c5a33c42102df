// Package vram keeps GPU workloads started under paddock inside a host's VRAM
// budget, so that a model server started by an agent cannot starve the
// desktop (compositor, browser, terminal) of video memory.
//
// It has four parts, each usable on its own:
//
//   - detection (Detect): GPUs from nvidia-smi and from amdgpu's sysfs files,
//     and whether the host is a desktop or headless; every source is read
//     through Sources, so tests run on captured fixtures without a GPU;
//   - the budget (NewBudget): total VRAM minus the desktop headroom, per GPU
//     when the GPUs are known, from the profile when it says so;
//   - estimators (estimate.go, a file per engine): how much VRAM a command
//     line will claim (vLLM, SGLang, TGI, llama.cpp, ollama), from its
//     flags, its model file or its model name;
//   - the preflight (Preflight, PreflightCommandFiles): the refusal, with
//     the numbers and the way out, or the acceptance.
//
// All figures are in GB meaning GiB (2^30 bytes), the unit nvidia-smi (MiB)
// and the engines themselves report. See docs/vram.md.
package vram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// GPU is one detected device.
type GPU struct {
	// Index is the device's index as its vendor's tools and
	// CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES count it.
	Index    int
	Name     string
	TotalMiB int64
	UsedMiB  int64
	// DisplayActive: a display is attached to (or initialized on) this GPU.
	DisplayActive bool
	// Vendor is "nvidia" or "amd".
	Vendor string
	// Card is the DRM card ("card0") for sysfs-detected GPUs.
	Card string
}

// ComputeApp is one process nvidia-smi reports as using GPU memory.
type ComputeApp struct {
	PID     int
	UsedMiB int64
}

// Host is what detection found.
type Host struct {
	GPUs []GPU
	// Headless is true when no display is attached to the host (or the
	// profile says so).
	Headless bool
	// HeadlessSource says which evidence decided Headless, for messages.
	HeadlessSource string
	// ForeignUsedMiB is the VRAM already in use on the detected GPUs when
	// detection ran (memory.used / mem_info_vram_used summed). Before a
	// workload starts none of it is the agent's.
	ForeignUsedMiB int64
	// Apps lists the compute processes nvidia-smi reported.
	Apps []ComputeApp
	// Notes records sources that were missing or failed (nvidia-smi not
	// installed, no devices), in plain words.
	Notes []string
}

// Sources is everything detection reads. LiveSources reads the machine;
// tests use a fixture-backed fake.
type Sources interface {
	// NvidiaSMI runs nvidia-smi with args and returns its standard output.
	// A missing nvidia-smi is an error wrapping exec.ErrNotFound.
	NvidiaSMI(args ...string) ([]byte, error)
	ReadFile(path string) ([]byte, error)
	Glob(pattern string) ([]string, error)
	Getenv(string) string
	// Processes returns the comm names of running processes (LiveSources:
	// each name once), for display-server detection.
	Processes() ([]string, error)
}

// queryGPUArgs is nvidia-smi's query of the GPUs detection runs, which
// ParseNvidiaGPUs reads.
func queryGPUArgs() []string {
	return []string{"--query-gpu=index,name,memory.total,memory.used,display_active", "--format=csv,noheader,nounits"}
}

// queryAppsArgs is nvidia-smi's query of the compute processes detection
// runs, which ParseNvidiaApps reads.
func queryAppsArgs() []string {
	return []string{"--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"}
}

// DRMRoot is where DRM devices live in sysfs.
const DRMRoot = "/sys/class/drm"

// nvidiaSMITimeout bounds one nvidia-smi run: it hangs when the driver is wedged.
const nvidiaSMITimeout = 5 * time.Second

type liveSources struct{}

// LiveSources reads the real machine: nvidia-smi (PATH, then the usual
// install locations; killed after 5 s), os.ReadFile, filepath.Glob,
// os.Getenv, and /proc/*/comm.
func LiveSources() Sources { return liveSources{} }

func (liveSources) NvidiaSMI(args ...string) ([]byte, error) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		for _, p := range []string{"/usr/bin/nvidia-smi", "/usr/local/bin/nvidia-smi", "/usr/local/nvidia/bin/nvidia-smi", "/run/current-system/sw/bin/nvidia-smi"} {
			if st, e := os.Stat(p); e == nil && !st.IsDir() {
				path, err = p, nil
				break
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi: %w", exec.ErrNotFound)
	}
	ctx, cancel := context.WithTimeout(context.Background(), nvidiaSMITimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return out, fmt.Errorf("nvidia-smi did not answer within %s", nvidiaSMITimeout)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(string(out))
		}
		return out, fmt.Errorf("nvidia-smi: %v: %s", err, firstLine(msg))
	}
	return out, nil
}

func (liveSources) ReadFile(path string) ([]byte, error)  { return os.ReadFile(path) }
func (liveSources) Glob(pattern string) ([]string, error) { return filepath.Glob(pattern) }
func (liveSources) Getenv(k string) string                { return os.Getenv(k) }

// Processes reads /proc/PID/comm of every process, and returns each name
// once. It runs in the background of every paddock run (BudgetCache), and
// paddock may be a container's init with thousands of processes under it:
// so a name costs one open, one read into a buffer used for all of them
// and one close, not an *os.File, a stat and a growing buffer each
// (os.ReadFile), and only a name not seen before is kept.
func (liveSources) Processes() ([]string, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	seen := map[string]bool{}
	var names []string
	buf := make([]byte, 64) // comm is at most 15 bytes and a newline
	for {
		ents, err := d.Readdirnames(256)
		for _, pid := range ents {
			if pid == "" || pid[0] < '0' || pid[0] > '9' {
				continue
			}
			name, ok := readComm("/proc/"+pid+"/comm", buf)
			if !ok || seen[string(name)] {
				continue // exited meanwhile, or not ours to read
			}
			seen[string(name)] = true
			names = append(names, string(name))
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return names, fmt.Errorf("read /proc: %w", err)
		}
	}
	if len(names) == 0 {
		return nil, errors.New("no process names readable under /proc")
	}
	return names, nil
}

// readComm reads path (a /proc/PID/comm) into buf and returns the name in
// it, trimmed.
func readComm(path string, buf []byte) ([]byte, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	if err != nil || n <= 0 {
		return nil, false
	}
	name := bytes.TrimSpace(buf[:n])
	return name, len(name) > 0
}

// Detect finds the host's GPUs and whether it is headless. headless is the
// profile's value (nil: decide from the evidence). A returned error names
// sources that answered with something detection could not parse; the Host
// still holds everything that could be read. Sources that are simply absent
// (no nvidia-smi, no amdgpu) are not errors: no GPU found is a valid answer.
func Detect(s Sources, headless *bool) (Host, error) {
	var h Host
	var errs []error

	nv, notes, err := detectNvidia(s)
	h.Notes = append(h.Notes, notes...)
	if err != nil {
		errs = append(errs, err)
	}
	h.GPUs = append(h.GPUs, nv...)
	if len(nv) > 0 {
		apps, err := detectApps(s)
		if err != nil {
			errs = append(errs, err)
		}
		h.Apps = apps
	}

	amd, err := detectAMD(s)
	if err != nil {
		errs = append(errs, err)
	}
	connected := connectedConnectors(s)
	for i := range amd {
		for _, c := range connected {
			if cardOf(c) == amd[i].Card {
				amd[i].DisplayActive = true
			}
		}
	}
	h.GPUs = append(h.GPUs, amd...)
	if len(h.GPUs) == 0 {
		h.Notes = append(h.Notes, "no AMD GPU in "+DRMRoot+" (no card*/device/mem_info_vram_total)")
	}
	for _, g := range h.GPUs {
		h.ForeignUsedMiB += g.UsedMiB
	}
	h.Headless, h.HeadlessSource = decideHeadless(s, h.GPUs, connected, headless)
	return h, errors.Join(errs...)
}

func detectNvidia(s Sources) ([]GPU, []string, error) {
	out, err := s.NvidiaSMI(queryGPUArgs()...)
	if err != nil {
		text := strings.TrimSpace(string(out))
		switch {
		case errors.Is(err, exec.ErrNotFound):
			return nil, []string{"nvidia-smi is not installed: no NVIDIA GPU detected"}, nil
		case strings.Contains(text, "No devices were found") || strings.Contains(err.Error(), "No devices were found"):
			return nil, []string{"nvidia-smi found no devices"}, nil
		}
		return nil, []string{fmt.Sprintf("nvidia-smi failed, NVIDIA GPUs not counted: %v", err)}, nil
	}
	gpus, err := ParseNvidiaGPUs(out)
	return gpus, nil, err
}

// ParseNvidiaGPUs parses the output of nvidia-smi with queryGPUArgs:
// "0, NVIDIA GeForce RTX 4090, 24564, 1024, Enabled" per line. Lines that
// do not parse are reported in the error and skipped.
func ParseNvidiaGPUs(out []byte) ([]GPU, error) {
	var gpus []GPU
	var bad []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "No devices were found") {
			continue
		}
		f := strings.Split(line, ",")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if len(f) < 5 {
			bad = append(bad, line)
			continue
		}
		n := len(f)
		idx, err1 := strconv.Atoi(f[0])
		total, err2 := parseMiB(f[n-3])
		used, err3 := parseMiB(f[n-2])
		if err1 != nil || err2 != nil {
			bad = append(bad, line)
			continue
		}
		if err3 != nil {
			used = 0 // "[N/A]" on some vGPU/MIG setups: unknown, not fatal
		}
		gpus = append(gpus, GPU{
			Index:         idx,
			Name:          strings.Join(f[1:n-3], ","),
			TotalMiB:      total,
			UsedMiB:       used,
			DisplayActive: strings.EqualFold(f[n-1], "Enabled"),
			Vendor:        "nvidia",
		})
	}
	if len(bad) > 0 {
		return gpus, fmt.Errorf("nvidia-smi --query-gpu: cannot parse %q", bad)
	}
	return gpus, nil
}

func detectApps(s Sources) ([]ComputeApp, error) {
	out, err := s.NvidiaSMI(queryAppsArgs()...)
	if err != nil {
		return nil, nil // only used to attribute memory; memory.used already counts it
	}
	return ParseNvidiaApps(out)
}

// ParseNvidiaApps parses nvidia-smi with queryAppsArgs: "pid, used_memory"
// per line. "[N/A]" memory (containers without pid access) counts as 0.
func ParseNvidiaApps(out []byte) ([]ComputeApp, error) {
	var apps []ComputeApp
	var bad []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "No running") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 2 {
			bad = append(bad, line)
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(f[0]))
		if err != nil {
			bad = append(bad, line)
			continue
		}
		used, err := parseMiB(strings.TrimSpace(f[1]))
		if err != nil {
			used = 0
		}
		apps = append(apps, ComputeApp{PID: pid, UsedMiB: used})
	}
	if len(bad) > 0 {
		return apps, fmt.Errorf("nvidia-smi --query-compute-apps: cannot parse %q", bad)
	}
	return apps, nil
}

func parseMiB(s string) (int64, error) {
	s = strings.TrimSuffix(strings.TrimSpace(s), " MiB")
	return strconv.ParseInt(s, 10, 64)
}

var cardRe = lazyRegexp(`^card(\d+)$`)

// detectAMD reads amdgpu's VRAM counters: /sys/class/drm/cardN/device/mem_info_vram_{total,used} (bytes).
func detectAMD(s Sources) ([]GPU, error) {
	paths, err := s.Glob(DRMRoot + "/card*/device/mem_info_vram_total")
	if err != nil {
		return nil, fmt.Errorf("glob %s: %w", DRMRoot, err)
	}
	type found struct {
		n   int
		gpu GPU
	}
	var list []found
	var bad []string
	for _, p := range paths {
		card := filepath.Base(filepath.Dir(filepath.Dir(p)))
		m := cardRe().FindStringSubmatch(card)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		dev := filepath.Dir(p)
		total, err := readInt(s, p)
		if err != nil {
			bad = append(bad, p)
			continue
		}
		used, err := readInt(s, dev+"/mem_info_vram_used")
		if err != nil {
			used = 0
		}
		name := "AMD GPU (" + card + ")"
		if b, err := s.ReadFile(dev + "/product_name"); err == nil && strings.TrimSpace(string(b)) != "" {
			name = strings.TrimSpace(string(b))
		}
		list = append(list, found{n, GPU{
			Name: name, TotalMiB: total >> 20, UsedMiB: used >> 20, Vendor: "amd", Card: card,
		}})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].n < list[j].n })
	gpus := make([]GPU, 0, len(list))
	for i, f := range list {
		f.gpu.Index = i
		gpus = append(gpus, f.gpu)
	}
	if len(bad) > 0 {
		return gpus, fmt.Errorf("cannot read VRAM size from %q", bad)
	}
	return gpus, nil
}

func readInt(s Sources, path string) (int64, error) {
	b, err := s.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// bmcDrivers drive the management controller's or firmware's framebuffer,
// whose connectors report "connected" on servers with nothing plugged in.
var bmcDrivers = map[string]bool{"ast": true, "mgag200": true, "hibmc-drm": true, "simpledrm": true, "cirrus": true, "cirrus-qemu": true}

// connectedConnectors lists DRM connectors ("card0-DP-1") whose status is
// "connected", leaving out those of BMC and firmware framebuffers.
func connectedConnectors(s Sources) []string {
	paths, err := s.Glob(DRMRoot + "/card*-*/status")
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range paths {
		b, err := s.ReadFile(p)
		if err != nil || strings.TrimSpace(string(b)) != "connected" {
			continue
		}
		conn := filepath.Base(filepath.Dir(p))
		if bmcDrivers[cardDriver(s, cardOf(conn))] {
			continue
		}
		out = append(out, conn)
	}
	sort.Strings(out)
	return out
}

func cardOf(connector string) string {
	card, _, _ := strings.Cut(connector, "-")
	return card
}

func cardDriver(s Sources, card string) string {
	b, err := s.ReadFile(DRMRoot + "/" + card + "/device/uevent")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "DRIVER="); ok {
			return v
		}
	}
	return ""
}

// displayServers are process names (comm, at most 15 characters) of X
// servers and Wayland compositors that draw on a real GPU.
var displayServers = map[string]bool{
	"Xorg": true, "X": true, "Xwayland": true, "gnome-shell": true, "kwin_wayland": true, "kwin_x11": true,
	"sway": true, "Hyprland": true, "weston": true, "mutter": true, "wayfire": true, "labwc": true,
	"river": true, "niri": true, "cosmic-comp": true, "gamescope": true, "cage": true, "kwin": true,
}

// virtualXServers draw into memory, not on a GPU (CI's xvfb-run, VNC).
var virtualXServers = map[string]bool{"Xvfb": true, "Xvnc": true, "Xtigervnc": true, "Xdummy": true}

var localDisplayRe = lazyRegexp(`^(unix)?:\d+(\.\d+)?$`)

// decideHeadless weighs the evidence in order: the profile, a display on a
// GPU (nvidia-smi display_active, DRM connectors), a running display server
// or compositor, then DISPLAY / WAYLAND_DISPLAY.
func decideHeadless(s Sources, gpus []GPU, connected []string, profile *bool) (bool, string) {
	if profile != nil {
		return *profile, fmt.Sprintf("profile: headless = %t", *profile)
	}
	for _, g := range gpus {
		if g.DisplayActive && g.Vendor == "nvidia" {
			return false, fmt.Sprintf("nvidia-smi: display active on GPU %d (%s)", g.Index, g.Name)
		}
	}
	if len(connected) > 0 {
		return false, "drm: connector " + strings.Join(connected, ", ") + " connected"
	}
	procs, perr := s.Processes()
	virtual := ""
	for _, p := range procs {
		if displayServers[p] {
			return false, "process: " + p + " (display server or compositor) is running"
		}
		if virtualXServers[p] {
			virtual = p
		}
	}
	if w := s.Getenv("WAYLAND_DISPLAY"); w != "" {
		return false, "env: WAYLAND_DISPLAY=" + w
	}
	if d := s.Getenv("DISPLAY"); d != "" {
		switch {
		case virtual != "" && perr == nil:
			// xvfb-run in CI: an X server without a GPU behind it.
		case localDisplayRe().MatchString(d) || strings.HasPrefix(d, "/"):
			return false, "env: DISPLAY=" + d
		}
	}
	why := "no display found (nvidia-smi display_active, DRM connectors, display-server processes, DISPLAY/WAYLAND_DISPLAY)"
	if virtual != "" {
		why += "; " + virtual + " is a virtual X server"
	}
	return true, why
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
