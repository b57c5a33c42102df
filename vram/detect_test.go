package vram

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func host(t *testing.T, name string) Sources {
	t.Helper()
	dir := filepath.Join("testdata", "hosts", name)
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return DirSources(dir)
}

func TestDetectFixtures(t *testing.T) {
	type gpu struct {
		index    int
		name     string
		total    int64
		used     int64
		display  bool
		vendor   string
		fromCard string
	}
	tests := []struct {
		host         string
		gpus         []gpu
		headless     bool
		sourceHas    string
		foreignMiB   int64
		apps         int
		noteHas      string
		wantErrMatch string
	}{
		{host: "none", headless: true, sourceHas: "no display found", noteHas: "nvidia-smi is not installed"},
		{host: "nvidia-no-devices", headless: true, sourceHas: "no display found", noteHas: "nvidia-smi found no devices"},
		{host: "rtx4090-desktop", gpus: []gpu{{0, "NVIDIA GeForce RTX 4090", 24564, 1187, true, "nvidia", ""}},
			headless: false, sourceHas: "nvidia-smi: display active on GPU 0 (NVIDIA GeForce RTX 4090)", foreignMiB: 1187, apps: 1},
		{host: "rtx4090-headless", gpus: []gpu{{0, "NVIDIA GeForce RTX 4090", 24564, 1, false, "nvidia", ""}},
			headless: true, sourceHas: "no display found", foreignMiB: 1},
		{host: "2gpu-desktop", gpus: []gpu{
			{0, "NVIDIA GeForce RTX 3090", 24576, 1543, true, "nvidia", ""},
			{1, "NVIDIA GeForce RTX 3090", 24576, 3, false, "nvidia", ""},
		}, headless: false, sourceHas: "display active on GPU 0", foreignMiB: 1546},
		{host: "2gpu-headless", gpus: []gpu{
			{0, "NVIDIA A100-SXM4-80GB", 81920, 4, false, "nvidia", ""},
			{1, "NVIDIA A100-SXM4-80GB", 81920, 40123, false, "nvidia", ""},
		}, headless: true, sourceHas: "no display found", foreignMiB: 40127, apps: 1},
		{host: "amd-desktop", gpus: []gpu{{0, "AMD GPU (card0)", 16368, 1250, true, "amd", "card0"}},
			headless: false, sourceHas: "drm: connector card0-DP-1 connected", foreignMiB: 1250},
		{host: "intel-laptop", headless: false, sourceHas: "drm: connector card0-eDP-1 connected", noteHas: "no AMD GPU"},
		{host: "ci-xvfb", headless: true, sourceHas: "Xvfb is a virtual X server"},
		{host: "ssh-x11-forwarding", gpus: []gpu{{0, "NVIDIA L40S", 46068, 0, false, "nvidia", ""}}, headless: true, sourceHas: "no display found"},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			h, err := Detect(host(t, tc.host), nil)
			if err != nil {
				t.Fatalf("Detect: %v", err)
			}
			if len(h.GPUs) != len(tc.gpus) {
				t.Fatalf("GPUs = %+v, want %d", h.GPUs, len(tc.gpus))
			}
			for i, w := range tc.gpus {
				g := h.GPUs[i]
				if g.Index != w.index || g.Name != w.name || g.TotalMiB != w.total || g.UsedMiB != w.used ||
					g.DisplayActive != w.display || g.Vendor != w.vendor || g.Card != w.fromCard {
					t.Errorf("GPU %d = %+v, want %+v", i, g, w)
				}
			}
			if h.Headless != tc.headless || !strings.Contains(h.HeadlessSource, tc.sourceHas) {
				t.Errorf("Headless = %v (%q), want %v (%q)", h.Headless, h.HeadlessSource, tc.headless, tc.sourceHas)
			}
			if h.ForeignUsedMiB != tc.foreignMiB {
				t.Errorf("ForeignUsedMiB = %d, want %d", h.ForeignUsedMiB, tc.foreignMiB)
			}
			if len(h.Apps) != tc.apps {
				t.Errorf("Apps = %+v, want %d", h.Apps, tc.apps)
			}
			if tc.noteHas != "" && !strings.Contains(strings.Join(h.Notes, "\n"), tc.noteHas) {
				t.Errorf("Notes = %q, want one containing %q", h.Notes, tc.noteHas)
			}
		})
	}
}

func TestDetectProfileHeadlessWins(t *testing.T) {
	yes, no := true, false
	h, _ := Detect(host(t, "rtx4090-desktop"), &yes)
	if !h.Headless || h.HeadlessSource != "profile: headless = true" {
		t.Errorf("profile headless=true on a desktop: %v %q", h.Headless, h.HeadlessSource)
	}
	h, _ = Detect(host(t, "none"), &no)
	if h.Headless || h.HeadlessSource != "profile: headless = false" {
		t.Errorf("profile headless=false on a server: %v %q", h.Headless, h.HeadlessSource)
	}
}

// TestDetectAMDSysfsTempDir builds an amdgpu sysfs tree in a temporary
// directory: two cards, one driving a monitor, one with a product name.
func TestDetectAMDSysfsTempDir(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"nvidia-smi/missing":                             "",
		"sys/class/drm/card0/device/mem_info_vram_total": "25753026560\n", // 24 GiB card, as amdgpu prints it
		"sys/class/drm/card0/device/mem_info_vram_used":  "536870912\n",
		"sys/class/drm/card0/device/product_name":        "Radeon RX 7900 XTX\n",
		"sys/class/drm/card0/device/uevent":              "DRIVER=amdgpu\n",
		"sys/class/drm/card0-DP-1/status":                "disconnected\n",
		"sys/class/drm/card1/device/mem_info_vram_total": "8573157376\n",
		"sys/class/drm/card1/device/mem_info_vram_used":  "1073741824\n",
		"sys/class/drm/card1/device/uevent":              "DRIVER=amdgpu\n",
		"sys/class/drm/card1-HDMI-A-1/status":            "connected\n",
		"sys/class/drm/renderD128/device/uevent":         "DRIVER=amdgpu\n",
		"comm":                                           "systemd\n",
		"env":                                            "",
	}
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := Detect(DirSources(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.GPUs) != 2 {
		t.Fatalf("GPUs = %+v", h.GPUs)
	}
	g0, g1 := h.GPUs[0], h.GPUs[1]
	if g0.Name != "Radeon RX 7900 XTX" || g0.TotalMiB != 24560 || g0.UsedMiB != 512 || g0.DisplayActive || g0.Index != 0 {
		t.Errorf("card0 = %+v", g0)
	}
	if g1.Name != "AMD GPU (card1)" || g1.TotalMiB != 8176 || g1.UsedMiB != 1024 || !g1.DisplayActive || g1.Index != 1 {
		t.Errorf("card1 = %+v", g1)
	}
	if h.Headless || !strings.Contains(h.HeadlessSource, "card1-HDMI-A-1") {
		t.Errorf("headless %v %q", h.Headless, h.HeadlessSource)
	}
}

func TestParseNvidiaGPUs(t *testing.T) {
	out := "0, NVIDIA GeForce RTX 4090, 24564, 1024, Enabled\n" +
		"1, NVIDIA RTX A6000, 49140, [N/A], [N/A]\n" +
		"2, Weird, Name, With Commas, 1000, 10, Disabled\n" +
		"garbage line\n\n"
	gpus, err := ParseNvidiaGPUs([]byte(out))
	if err == nil || !strings.Contains(err.Error(), "garbage line") {
		t.Errorf("err = %v, want the garbage line named", err)
	}
	if len(gpus) != 3 {
		t.Fatalf("gpus = %+v", gpus)
	}
	if !gpus[0].DisplayActive || gpus[0].TotalMiB != 24564 || gpus[0].UsedMiB != 1024 {
		t.Errorf("gpu0 %+v", gpus[0])
	}
	if gpus[1].DisplayActive || gpus[1].UsedMiB != 0 || gpus[1].TotalMiB != 49140 {
		t.Errorf("gpu1 (N/A fields) %+v", gpus[1])
	}
	if gpus[2].Name != "Weird,Name,With Commas" || gpus[2].TotalMiB != 1000 {
		t.Errorf("gpu2 (commas in name) %+v", gpus[2])
	}
}

func TestParseNvidiaApps(t *testing.T) {
	apps, err := ParseNvidiaApps([]byte("123, 4000\n456, [N/A]\nNo running processes found\n"))
	if err != nil || len(apps) != 2 || apps[0] != (ComputeApp{123, 4000}) || apps[1] != (ComputeApp{456, 0}) {
		t.Errorf("apps %+v err %v", apps, err)
	}
}

func TestDetectReportsUnparsableOutput(t *testing.T) {
	s := fakeSMI{gpu: "this is not csv\n"}
	h, err := Detect(s, nil)
	if err == nil || len(h.GPUs) != 0 {
		t.Errorf("Detect on garbage: %+v, %v", h, err)
	}
}

func TestDetectNvidiaFailureIsANoteNotAnError(t *testing.T) {
	s := fakeSMI{gpuErr: errors.New("nvidia-smi: exit status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver")}
	h, err := Detect(s, nil)
	if err != nil || len(h.GPUs) != 0 || !strings.Contains(strings.Join(h.Notes, " "), "couldn't communicate") {
		t.Errorf("h %+v err %v", h, err)
	}
}

func TestLiveSourcesWithoutNvidiaSMI(t *testing.T) {
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Skip("nvidia-smi is installed here; this checks the not-installed path")
	}
	t.Setenv("PATH", t.TempDir())
	h, err := Detect(LiveSources(), nil)
	if err != nil {
		t.Fatalf("Detect(LiveSources) without nvidia-smi: %v", err)
	}
	for _, g := range h.GPUs {
		if g.Vendor == "nvidia" {
			t.Errorf("NVIDIA GPU found without nvidia-smi: %+v", g)
		}
	}
	if h.HeadlessSource == "" {
		t.Error("no HeadlessSource")
	}
}

// TestLiveSourcesProcesses: the live process list holds this test's own
// name and a child's, each once, however many processes share it.
func TestLiveSourcesProcesses(t *testing.T) {
	self, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skipf("needs /proc: %v", err)
	}
	var kids []*exec.Cmd
	for range 3 {
		c := exec.Command("sleep", "10")
		if err := c.Start(); err != nil {
			t.Skipf("needs sleep: %v", err)
		}
		kids = append(kids, c)
	}
	defer func() {
		for _, c := range kids {
			c.Process.Kill()
			c.Wait()
		}
	}()
	names, err := LiveSources().Processes()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	for _, want := range []string{strings.TrimSpace(string(self)), "sleep"} {
		if count[want] != 1 {
			t.Errorf("Processes has %q %d times, want once: %q", want, count[want], names)
		}
	}
}

// fakeSMI answers nvidia-smi from strings; everything else is empty.
type fakeSMI struct {
	gpu, apps string
	gpuErr    error
}

func (f fakeSMI) NvidiaSMI(args ...string) ([]byte, error) {
	if strings.HasPrefix(args[0], "--query-gpu") {
		return []byte(f.gpu), f.gpuErr
	}
	return []byte(f.apps), nil
}
func (fakeSMI) ReadFile(string) ([]byte, error) { return nil, os.ErrNotExist }
func (fakeSMI) Glob(string) ([]string, error)   { return nil, nil }
func (fakeSMI) Getenv(string) string            { return "" }
func (fakeSMI) Processes() ([]string, error)    { return nil, nil }
