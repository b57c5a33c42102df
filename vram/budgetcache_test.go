package vram

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeGPU is a Sources with one NVIDIA GPU whose total can change, and a
// nvidia-smi that waits on gate when gate is set.
type fakeGPU struct {
	mu       sync.Mutex
	totalMiB int64
	gate     chan struct{}
	runs     atomic.Int64 // --query-gpu runs
}

func (f *fakeGPU) NvidiaSMI(args ...string) ([]byte, error) {
	f.mu.Lock()
	gate, total := f.gate, f.totalMiB
	f.mu.Unlock()
	if args[0] != queryGPUArgs()[0] {
		return nil, nil // compute apps: none
	}
	if gate != nil {
		<-gate
	}
	f.runs.Add(1)
	return fmt.Appendf(nil, "0, NVIDIA Test, %d, 100, Disabled\n", total), nil
}

func (f *fakeGPU) setTotal(mib int64) {
	f.mu.Lock()
	f.totalMiB = mib
	f.mu.Unlock()
}

func (f *fakeGPU) ReadFile(string) ([]byte, error) { return nil, os.ErrNotExist }
func (f *fakeGPU) Glob(string) ([]string, error)   { return nil, nil }
func (f *fakeGPU) Getenv(string) string            { return "" }
func (f *fakeGPU) Processes() ([]string, error)    { return nil, nil }

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not after 5s", what)
		}
	}
}

func TestBudgetCacheSlowDetection(t *testing.T) {
	headless := true
	tests := []struct {
		name      string
		set       Settings
		total     float64 // of the pending budget
		available float64
		headless  bool
	}{
		// Nothing known: the desktop default, the less generous.
		{name: "no profile", total: DefaultDesktopTotalGB, available: DefaultDesktopTotalGB - MinDesktopHeadroomGB},
		{name: "profile total", set: Settings{TotalGB: ptr(8.0)}, total: 8, available: 6},
		{name: "profile headless", set: Settings{Headless: &headless}, total: DefaultHeadlessTotalGB, available: DefaultHeadlessTotalGB, headless: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeGPU{totalMiB: 24 * 1024, gate: make(chan struct{})}
			const wait = 100 * time.Millisecond
			start := time.Now()
			c := NewBudgetCache(src, tc.set, CacheOptions{Wait: wait, Refresh: -1})
			defer c.Close()
			if d := time.Since(start); d > wait {
				t.Errorf("NewBudgetCache took %v: it must not wait for detection", d)
			}
			start = time.Now()
			b := c.Budget()
			if d := time.Since(start); d < wait || d > wait+time.Second {
				t.Errorf("Budget took %v while detection hangs, want about %v", d, wait)
			}
			if b.TotalGB != tc.total || b.AvailableGB != tc.available || b.Headless != tc.headless || len(b.PerGPU) != 0 {
				t.Errorf("pending budget %+v, want %v GB total, %v available, headless %v", b, tc.total, tc.available, tc.headless)
			}
			if !strings.Contains(strings.Join(b.Notes, "; "), "GPU detection had not finished within 100ms") {
				t.Errorf("pending budget notes %q say nothing of detection", b.Notes)
			}
			if !tc.headless && !strings.Contains(b.Describe(), "not known yet") {
				t.Errorf("Describe %q says nothing of detection", b.Describe())
			}
			close(src.gate)
			waitFor(t, "the detected budget", func() bool { return c.Budget() != b })
			if b := c.Budget(); tc.set.TotalGB == nil && (b.TotalGB != 24 || len(b.PerGPU) != 1) {
				t.Errorf("detected budget %+v, want the 24 GB GPU", b)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestBudgetCacheRefresh(t *testing.T) {
	src := &fakeGPU{totalMiB: 24 * 1024}
	var reports atomic.Int64
	c := NewBudgetCache(src, Settings{}, CacheOptions{Wait: 5 * time.Second, Refresh: 20 * time.Millisecond,
		Report: func(Budget, error, time.Duration) { reports.Add(1) }})
	if b := c.Budget(); b.TotalGB != 24 || b.Source != "detected" {
		t.Fatalf("first budget %+v, want 24 GB detected", b)
	}
	src.setTotal(48 * 1024) // a second card's worth: hot-plug
	waitFor(t, "the refreshed budget", func() bool { return c.Budget().TotalGB == 48 })
	c.Close()
	<-c.done
	n := src.runs.Load()
	if reports.Load() != n {
		t.Errorf("%d reports for %d detections", reports.Load(), n)
	}
	time.Sleep(60 * time.Millisecond)
	if m := src.runs.Load(); m != n {
		t.Errorf("%d detections after Close, want none", m-n)
	}
}

// Delay postpones the first detection, but a Budget call starts it at once.
func TestBudgetCacheDelayKick(t *testing.T) {
	tests := []struct {
		name   string
		delay  time.Duration
		ask    bool
		detect bool // within the test's 300ms
	}{
		{name: "asked before the delay", delay: time.Hour, ask: true, detect: true},
		{name: "not asked", delay: time.Hour, detect: false},
		{name: "no delay", detect: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeGPU{totalMiB: 16 * 1024}
			c := NewBudgetCache(src, Settings{}, CacheOptions{Delay: tc.delay, Wait: 2 * time.Second, Refresh: -1})
			defer c.Close()
			if tc.ask {
				if b := c.Budget(); b.Source != "detected" {
					t.Errorf("Budget %+v, want the detected one", b)
				}
			}
			time.Sleep(300 * time.Millisecond)
			if got := src.runs.Load() > 0; got != tc.detect {
				t.Errorf("detected: %v, want %v", got, tc.detect)
			}
		})
	}
}
