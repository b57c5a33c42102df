package vram

import (
	"fmt"
	"sync"
	"time"
)

// Defaults of CacheOptions.
const (
	// DefaultBudgetWait is the longest BudgetCache.Budget waits for the
	// first detection: a decision asks for the budget, and others may wait
	// on it.
	DefaultBudgetWait = 500 * time.Millisecond
	// DefaultBudgetRefresh is the time between the end of one detection
	// and the start of the next: a GPU plugged in or a desktop that grew
	// its VRAM use is seen within about a minute.
	DefaultBudgetRefresh = 60 * time.Second
)

// CacheOptions tune a BudgetCache.
type CacheOptions struct {
	// Delay is how long after NewBudgetCache the first detection starts (0:
	// at once), so that a short command does not share the CPU with it. A
	// Budget call before then starts it at once.
	Delay time.Duration
	// Wait is the longest Budget waits for the first detection; then it
	// answers with the pending budget. 0: DefaultBudgetWait.
	Wait time.Duration
	// Refresh is the time from the end of one detection to the start of
	// the next. 0: DefaultBudgetRefresh; negative: detect once.
	Refresh time.Duration
	// Report, when set, is called after each detection with its budget, its
	// error and how long it took (for logs). It runs on the detecting
	// goroutine: a slow Report delays the next refresh, no decision.
	Report func(b Budget, err error, took time.Duration)
}

// BudgetCache keeps the host's VRAM budget, detected in the background, so
// that a decision about a GPU workload never runs detection itself
// (nvidia-smi may take seconds, and is killed only after 5).
//
// Detection starts on a goroutine when the cache is made (after
// CacheOptions.Delay) and runs again CacheOptions.Refresh after each one
// ends, one at a time, until Close. Budget answers the latest finished
// detection's budget at once. Before the first has finished it waits for
// it at most CacheOptions.Wait, then answers the pending budget: the
// profile's settings over an undetected host, that is the conservative
// defaults an unconfigured host gets when detection finds nothing (a 16 GB
// desktop unless the profile says otherwise), never more; its
// HeadlessSource and Notes say that detection had not finished. A refresh
// replaces the budget whatever it found: a GPU gone, or a detection that
// failed, brings the conservative defaults back.
type BudgetCache struct {
	src     Sources
	set     Settings
	opt     CacheOptions
	pending *Budget

	kick  chan struct{} // buffered: start the first detection now
	first chan struct{} // closed once the first detection is stored
	stop  chan struct{}
	done  chan struct{} // closed when the detecting goroutine ends
	once  sync.Once

	mu  sync.Mutex
	cur *Budget
}

// NewBudgetCache starts detecting the host through src, with the profile's
// settings s, and returns at once.
func NewBudgetCache(src Sources, s Settings, opt CacheOptions) *BudgetCache {
	if opt.Wait <= 0 {
		opt.Wait = DefaultBudgetWait
	}
	if opt.Refresh == 0 {
		opt.Refresh = DefaultBudgetRefresh
	}
	why := fmt.Sprintf("not known yet: GPU detection had not finished within %v", opt.Wait)
	pending := NewBudget(Host{HeadlessSource: why}, s)
	pending.Notes = append(pending.Notes, fmt.Sprintf("GPU detection had not finished within %v of this decision: the conservative defaults stand in until it does", opt.Wait))
	c := &BudgetCache{
		src: src, set: s, opt: opt, pending: &pending,
		kick: make(chan struct{}, 1), first: make(chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go c.loop()
	return c
}

// Budget returns the latest budget; see BudgetCache for what it answers
// before the first detection. The caller must not modify it. Its method
// value has the type supervisor.Config's VRAM field wants.
func (c *BudgetCache) Budget() *Budget {
	if b := c.latest(); b != nil {
		return b
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
	t := time.NewTimer(c.opt.Wait)
	defer t.Stop()
	select {
	case <-c.first:
		return c.latest()
	case <-t.C:
		return c.pending
	}
}

// Close stops the refreshes. A detection under way is not interrupted: it
// ends on its own (nvidia-smi is killed after 5 s) and its result is kept.
func (c *BudgetCache) Close() {
	c.once.Do(func() { close(c.stop) })
}

func (c *BudgetCache) latest() *Budget {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// loop detects after the delay (or a kick), then every refresh, until stop.
func (c *BudgetCache) loop() {
	defer close(c.done)
	if c.opt.Delay > 0 {
		t := time.NewTimer(c.opt.Delay)
		select {
		case <-t.C:
		case <-c.kick:
			t.Stop()
		case <-c.stop:
			t.Stop()
			return
		}
	}
	for {
		c.detect()
		if c.opt.Refresh < 0 {
			return
		}
		t := time.NewTimer(c.opt.Refresh)
		select {
		case <-t.C:
		case <-c.stop:
			t.Stop()
			return
		}
	}
}

// detect runs one detection and stores its budget.
func (c *BudgetCache) detect() {
	start := time.Now()
	h, err := Detect(c.src, c.set.Headless)
	b := NewBudget(h, c.set)
	if c.opt.Report != nil {
		c.opt.Report(b, err, time.Since(start))
	}
	c.mu.Lock()
	firstTime := c.cur == nil
	c.cur = &b
	c.mu.Unlock()
	if firstTime {
		close(c.first)
	}
}
