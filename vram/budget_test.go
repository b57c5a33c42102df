package vram

import (
	"math"
	"strings"
	"testing"
)

func f64(v float64) *float64 { return &v }
func boolp(v bool) *bool     { return &v }

func near(a, b float64) bool { return math.Abs(a-b) < 0.01 }

func TestDefaultHeadroom(t *testing.T) {
	for _, tc := range []struct{ total, want float64 }{
		{8, 2}, {16, 2}, {20, 2}, {24, 2.4}, {48, 4.8}, {80, 8},
	} {
		if got := DefaultHeadroomGB(tc.total); !near(got, tc.want) {
			t.Errorf("DefaultHeadroomGB(%v) = %v, want %v (max(2 GB, 10%%))", tc.total, got, tc.want)
		}
	}
}

func TestNewBudget(t *testing.T) {
	desktop := Host{Headless: false, HeadlessSource: "test desktop"}
	headless := Host{Headless: true, HeadlessSource: "test headless"}
	gpu := func(idx int, totalMiB, usedMiB int64, display bool) GPU {
		return GPU{Index: idx, Name: "GPU", TotalMiB: totalMiB, UsedMiB: usedMiB, DisplayActive: display, Vendor: "nvidia"}
	}
	tests := []struct {
		name                         string
		host                         Host
		set                          Settings
		total, headroom, avail       float64
		configured, isHeadless       bool
		source                       string
		perGPUAvail                  []float64
		headroomRuleHas, describeHas string
	}{
		{name: "seed profile 24 GB, 4 GB headroom", host: desktop, set: Settings{TotalGB: f64(24), HeadroomGB: f64(4)},
			total: 24, headroom: 4, avail: 20, configured: true, source: "profile", headroomRuleHas: "desktop_headroom_gb = 4.0"},
		{name: "profile total, default desktop headroom 10%", host: desktop, set: Settings{TotalGB: f64(48)},
			total: 48, headroom: 4.8, avail: 43.2, configured: true, source: "profile", headroomRuleHas: "max(2 GB, 10%"},
		{name: "profile total, default desktop headroom 2 GB floor", host: desktop, set: Settings{TotalGB: f64(12)},
			total: 12, headroom: 2, avail: 10, configured: true, source: "profile"},
		{name: "profile headroom honoured even above the default", host: desktop, set: Settings{TotalGB: f64(24), HeadroomGB: f64(8)},
			total: 24, headroom: 8, avail: 16, configured: true, source: "profile"},
		{name: "profile headroom honoured on a headless host", host: headless, set: Settings{TotalGB: f64(80), HeadroomGB: f64(6)},
			total: 80, headroom: 6, avail: 74, configured: true, isHeadless: true, source: "profile"},
		{name: "headless: no headroom", host: headless, set: Settings{TotalGB: f64(80)},
			total: 80, headroom: 0, avail: 80, configured: true, isHeadless: true, source: "profile", headroomRuleHas: "none reserved"},
		{name: "profile headless overrides detection", host: desktop, set: Settings{TotalGB: f64(80), Headless: boolp(true)},
			total: 80, headroom: 0, avail: 80, configured: true, isHeadless: true, source: "profile", describeHas: "profile: headless = true"},
		{name: "unconfigured desktop: conservative 16 GB", host: desktop,
			total: 16, headroom: 2, avail: 14, source: "default", describeHas: "not configured"},
		{name: "unconfigured headless: 80 GB", host: headless,
			total: 80, headroom: 0, avail: 80, isHeadless: true, source: "default"},
		{name: "unconfigured desktop, profile headroom only", host: desktop, set: Settings{HeadroomGB: f64(5)},
			total: 16, headroom: 5, avail: 11, source: "default"},
		{name: "detected 1 GPU desktop", host: Host{GPUs: []GPU{gpu(0, 24564, 1187, true)}, HeadlessSource: "x"},
			total: 23.99, headroom: 2.4, avail: 21.59, configured: true, source: "detected", perGPUAvail: []float64{21.59}},
		{name: "detected 2 GPUs, display on GPU 0 only", host: Host{GPUs: []GPU{gpu(0, 24576, 0, true), gpu(1, 24576, 0, false)}},
			total: 48, headroom: 2.4, avail: 45.6, configured: true, source: "detected", perGPUAvail: []float64{21.6, 24}},
		{name: "detected 2 GPUs, desktop but no GPU says which: headroom on both", host: Host{GPUs: []GPU{gpu(0, 24576, 0, false), gpu(1, 24576, 0, false)}},
			total: 48, headroom: 4.8, avail: 43.2, configured: true, source: "detected", perGPUAvail: []float64{21.6, 21.6}},
		{name: "detected 2 GPUs headless", host: Host{Headless: true, GPUs: []GPU{gpu(0, 81920, 0, false), gpu(1, 81920, 40123, false)}},
			total: 160, headroom: 0, avail: 160, configured: true, isHeadless: true, source: "detected", perGPUAvail: []float64{80, 80}},
		{name: "detected, profile headroom on the display GPU", host: Host{GPUs: []GPU{gpu(0, 24576, 0, true), gpu(1, 24576, 0, false)}}, set: Settings{HeadroomGB: f64(6)},
			total: 48, headroom: 6, avail: 42, configured: true, source: "detected", perGPUAvail: []float64{18, 24}},
		{name: "profile total wins over detection", host: Host{GPUs: []GPU{gpu(0, 24564, 0, true)}}, set: Settings{TotalGB: f64(20), HeadroomGB: f64(4)},
			total: 20, headroom: 4, avail: 16, configured: true, source: "profile"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBudget(tc.host, tc.set)
			if !near(b.TotalGB, tc.total) || !near(b.HeadroomGB, tc.headroom) || !near(b.AvailableGB, tc.avail) {
				t.Errorf("total/headroom/available = %.2f/%.2f/%.2f, want %.2f/%.2f/%.2f", b.TotalGB, b.HeadroomGB, b.AvailableGB, tc.total, tc.headroom, tc.avail)
			}
			if b.Configured != tc.configured || b.Headless != tc.isHeadless || b.Source != tc.source {
				t.Errorf("configured/headless/source = %v/%v/%q, want %v/%v/%q", b.Configured, b.Headless, b.Source, tc.configured, tc.isHeadless, tc.source)
			}
			if len(b.PerGPU) != len(tc.perGPUAvail) {
				t.Fatalf("PerGPU = %+v, want %d", b.PerGPU, len(tc.perGPUAvail))
			}
			for i, w := range tc.perGPUAvail {
				if !near(b.PerGPU[i].AvailableGB, w) {
					t.Errorf("GPU %d available %.2f, want %.2f", i, b.PerGPU[i].AvailableGB, w)
				}
			}
			if tc.headroomRuleHas != "" && !strings.Contains(b.HeadroomRule, tc.headroomRuleHas) {
				t.Errorf("HeadroomRule %q, want %q", b.HeadroomRule, tc.headroomRuleHas)
			}
			if tc.describeHas != "" && !strings.Contains(b.Describe(), tc.describeHas) {
				t.Errorf("Describe %q, want %q", b.Describe(), tc.describeHas)
			}
		})
	}
}

func TestBudgetFromFixtures(t *testing.T) {
	h, _ := Detect(host(t, "2gpu-headless"), nil)
	b := NewBudget(h, Settings{})
	if !near(b.UsedGB, 39.19) || !near(b.PerGPU[1].UsedGB, 39.18) {
		t.Errorf("used %.2f / GPU1 %.2f", b.UsedGB, b.PerGPU[1].UsedGB)
	}
	h, _ = Detect(host(t, "amd-desktop"), nil)
	b = NewBudget(h, Settings{})
	if len(b.PerGPU) != 1 || !b.PerGPU[0].Display || !near(b.PerGPU[0].HeadroomGB, 2) || b.PerGPU[0].Vendor != "amd" {
		t.Errorf("amd budget %+v", b.PerGPU)
	}
}
