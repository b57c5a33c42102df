package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/vram"
)

type preflightFlags struct {
	profile     string
	vram        float64
	totalVRAM   float64
	headroom    float64
	headless    string
	json        bool
	noDetect    bool
	hostFixture string
}

func newPreflightCmd() *cobra.Command {
	var f preflightFlags
	cmd := &cobra.Command{
		Use:   "preflight [--profile FILE] [--json] (--vram GB | -- CMD [ARG...])",
		Short: "Check a VRAM request, or a GPU command line, against the host's VRAM budget",
		Long: `Check a VRAM request (--vram GB) or what a GPU command line will claim
(-- CMD [ARG...]: vLLM, SGLang, TGI, llama.cpp, ollama) against the host's VRAM
budget: total VRAM (the profile's total_vram_gb, else detected through
nvidia-smi and /sys/class/drm) minus the desktop headroom (desktop_headroom_gb,
else max(2 GB, 10%) on a desktop and nothing on a headless host). A host with
no total configured and no GPU detected gets a conservative budget (16 GB
desktop, 80 GB headless) and large requests fail closed.

An over-budget request is accepted when PADDOCK_ALLOW_OVERBUDGET_VRAM=1 (alias
RLM_ALLOW_OVERBUDGET_VRAM=1) is in the environment or leads the command line.
See docs/vram.md.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPreflight(cmd, f, args)
		},
	}
	cmd.Flags().SetInterspersed(false)
	fl := cmd.Flags()
	fl.StringVar(&f.profile, "profile", "", "host profile `FILE` (TOML: total_vram_gb, desktop_headroom_gb, headless)")
	fl.Var(gbFlag{&f.vram}, "vram", "check a plain request of `GB`")
	fl.Var(gbFlag{&f.totalVRAM}, "total-vram", "host VRAM in `GB` (as the profile's total_vram_gb; overrides detection)")
	fl.Var(gbFlag{&f.headroom}, "headroom", "desktop headroom in `GB` (as the profile's desktop_headroom_gb)")
	fl.StringVar(&f.headless, "headless", "auto", "auto, true or false (as the profile's headless)")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON")
	fl.BoolVar(&f.noDetect, "no-detect", false, "do not probe the machine: no GPUs, headless unless --headless false")
	fl.StringVar(&f.hostFixture, "host-fixture", "", "read the host from a `DIR` captured by vram/testdata/capture.sh (tests)")
	_ = fl.MarkHidden("host-fixture")
	return cmd
}

// loadVRAMSettings reads the VRAM keys of the host profile (--profile,
// $PADDOCK_PROFILE, or the default location).
func loadVRAMSettings(profileFlag string) (vram.Settings, error) {
	p, err := loadProfile(profileFlag)
	if err != nil {
		return vram.Settings{}, err
	}
	return vramSettings(p), nil
}

func runPreflight(cmd *cobra.Command, f preflightFlags, args []string) error {
	fl := cmd.Flags()
	switch {
	case fl.Changed("vram") && len(args) > 0:
		return errors.New("preflight: give either --vram GB or -- CMD [ARG...], not both")
	case !fl.Changed("vram") && len(args) == 0:
		return errors.New("preflight: give --vram GB or -- CMD [ARG...]")
	}
	set, err := loadVRAMSettings(f.profile)
	if err != nil {
		return err
	}
	if fl.Changed("total-vram") {
		if f.totalVRAM <= 0 {
			return fmt.Errorf("preflight: --total-vram %g: want a size in GB above 0", f.totalVRAM)
		}
		set.TotalGB, set.TotalFrom = &f.totalVRAM, "--total-vram"
	}
	if fl.Changed("headroom") {
		set.HeadroomGB, set.HeadroomFrom = &f.headroom, "--headroom"
	}
	switch f.headless {
	case "auto":
	case "true", "false":
		v, _ := strconv.ParseBool(f.headless)
		set.Headless = &v
	default:
		return fmt.Errorf("preflight: --headless %q: want auto, true or false", f.headless)
	}

	var src vram.Sources
	switch {
	case f.hostFixture != "":
		src = vram.DirSources(f.hostFixture)
	case f.noDetect:
		src = noSources{}
	default:
		src = vram.LiveSources()
	}
	b, err := hostBudget(src, set)
	if err != nil {
		fmt.Fprintf(os.Stderr, "paddock: VRAM detection: %v\n", err)
	}

	var v vram.Verdict
	var report vram.Report
	if len(args) == 0 {
		v = vram.Preflight(f.vram, "", b, os.Environ(), set.AllowOptIn)
		report = vram.NewReport(v, b, f.vram, nil)
	} else {
		var est vram.Estimate
		var ok bool
		v, est, ok = vram.PreflightCommandFiles(args, os.Environ(), b, vram.SafeFiles(nil, vram.ReadLimits{}), set.AllowOptIn)
		if ok {
			report = vram.NewReport(v, b, est.RequiredGB, &est)
		} else {
			report = vram.NewReport(v, b, 0, nil)
		}
	}

	out := io.Writer(os.Stdout)
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		if !v.Allow {
			// The message already names the budget and where it came from.
			fmt.Fprintln(os.Stderr, v.Message)
		} else {
			fmt.Fprintln(out, v.Message)
			printBudget(out, b)
		}
	}
	if !v.Allow {
		return exitError{code: 1}
	}
	return nil
}

// printBudget lists where the budget came from and each GPU's share.
func printBudget(w io.Writer, b vram.Budget) {
	fmt.Fprintf(w, "budget: %.1f GB available of %.1f GB (%.1f GB headroom); %s\n", b.AvailableGB, b.TotalGB, b.HeadroomGB, b.Describe())
	for _, g := range b.PerGPU {
		fmt.Fprintf(w, "  GPU %d (%s, %s): %.1f GB total, %.1f GB headroom, %.1f GB available, %.1f GB in use\n",
			g.Index, g.Name, g.Vendor, g.TotalGB, g.HeadroomGB, g.AvailableGB, g.UsedGB)
	}
	for _, n := range b.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

// noSources is a machine with nothing to detect (--no-detect).
type noSources struct{}

func (noSources) NvidiaSMI(...string) ([]byte, error) {
	return nil, fmt.Errorf("nvidia-smi: detection off: %w", exec.ErrNotFound)
}
func (noSources) ReadFile(string) ([]byte, error) { return nil, os.ErrNotExist }
func (noSources) Glob(string) ([]string, error)   { return nil, nil }
func (noSources) Getenv(string) string            { return "" }
func (noSources) Processes() ([]string, error)    { return nil, nil }
