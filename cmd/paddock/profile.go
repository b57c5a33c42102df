package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/paddock-dev/paddock/profile"
)

type profileFlags struct {
	profile string
	json    bool
}

func newProfileCmd() *cobra.Command {
	var f profileFlags
	cmd := &cobra.Command{
		Use:   "profile [--profile FILE] [--json]",
		Short: "Print the effective host profile and where each value came from",
		Long: `Print the effective host profile: each key, its value, and where the value came
from (file PATH:LINE, detected, default). The file is --profile FILE, else
$PADDOCK_PROFILE, else $XDG_CONFIG_HOME/paddock/profile.toml (or
~/.config/paddock/profile.toml); with none, defaults and detected values
apply. A profile with an unknown key, a wrong type or an impossible value is
an error naming the file, line and key (exit status 2). See docs/profile.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			home, _ := os.UserHomeDir()
			p, err := profile.Load(f.profile, os.Getenv, home)
			if err != nil {
				return err
			}
			if f.json {
				return printProfileJSON(os.Stdout, p)
			}
			return printProfile(os.Stdout, p)
		},
	}
	cmd.Flags().StringVar(&f.profile, "profile", "", "host profile `FILE` (default $PADDOCK_PROFILE, else $XDG_CONFIG_HOME/paddock/profile.toml)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print a JSON object")
	return cmd
}

func gb(v *float64) string {
	if v == nil {
		return "not set"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

func printProfile(w io.Writer, p profile.Profile) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	row := func(key, source, value string) { fmt.Fprintf(tw, "%s\t%s\t%s\n", key, source, value) }
	path := p.Path
	if path == "" {
		path = "-"
	}
	row("profile", p.Sources["profile"], path)
	name := p.Name
	if name == "" {
		name = "(none)"
	}
	row(profile.KeyName, p.Sources[profile.KeyName], name)
	row(profile.KeyTotalVRAMGB, p.Sources[profile.KeyTotalVRAMGB], gb(p.TotalVRAMGB))
	row(profile.KeyDesktopHeadroomGB, p.Sources[profile.KeyDesktopHeadroomGB], gb(p.DesktopHeadroomGB))
	row(profile.KeyServicesToSurvive, p.Sources[profile.KeyServicesToSurvive], strings.Join(p.Services(), ", "))
	h, why := p.IsHeadless()
	if p.Headless == nil {
		row(profile.KeyHeadless, profile.SourceDetected, fmt.Sprintf("auto: %v (%s)", h, why))
	} else {
		row(profile.KeyHeadless, why, strconv.FormatBool(h))
	}
	row(profile.KeyAllowOptIn, p.Sources[profile.KeyAllowOptIn], strconv.FormatBool(p.AllowOptIn))
	row(profile.KeyAdoption, p.Sources[profile.KeyAdoption], p.Adoption)
	row(profile.KeyPty, p.Sources[profile.KeyPty], strconv.FormatBool(p.Pty))
	row(profile.KeyStrictWall, p.Sources[profile.KeyStrictWall], strconv.FormatBool(p.StrictWall))
	deputies := "none"
	if len(p.DeputiesAllowed) > 0 {
		deputies = strings.Join(p.DeputiesAllowed, ", ")
	}
	row(profile.KeyDeputiesAllowed, p.Sources[profile.KeyDeputiesAllowed], deputies)
	dt := p.Detected.DefaultTarget
	if dt == "" {
		dt = "unknown"
	}
	row("default_target", profile.SourceDetected, fmt.Sprintf("%s (%s)", dt, p.Detected.DefaultTargetReason))
	return tw.Flush()
}

type profileJSON struct {
	Profile           *string           `json:"profile"`
	Name              string            `json:"name"`
	TotalVRAMGB       *float64          `json:"total_vram_gb"`
	DesktopHeadroomGB *float64          `json:"desktop_headroom_gb"`
	ServicesToSurvive []string          `json:"services_to_survive"`
	Headless          any               `json:"headless"`
	AllowOptIn        bool              `json:"allow_opt_in"`
	Adoption          string            `json:"adoption"`
	Pty               bool              `json:"pty"`
	StrictWall        bool              `json:"strict_wall"`
	DeputiesAllowed   []string          `json:"deputies_allowed"`
	Detected          detectedJSON      `json:"detected"`
	Sources           map[string]string `json:"sources"`
}

type detectedJSON struct {
	Headless            bool   `json:"headless"`
	HeadlessReason      string `json:"headless_reason"`
	DefaultTarget       string `json:"default_target"`
	DefaultTargetReason string `json:"default_target_reason"`
}

func printProfileJSON(w io.Writer, p profile.Profile) error {
	out := profileJSON{
		Name: p.Name, TotalVRAMGB: p.TotalVRAMGB, DesktopHeadroomGB: p.DesktopHeadroomGB,
		ServicesToSurvive: p.Services(), AllowOptIn: p.AllowOptIn, Adoption: p.Adoption, Pty: p.Pty, StrictWall: p.StrictWall,
		DeputiesAllowed: append([]string{}, p.DeputiesAllowed...), Sources: p.Sources,
		Detected: detectedJSON{Headless: p.Detected.Headless, HeadlessReason: p.Detected.HeadlessReason,
			DefaultTarget: p.Detected.DefaultTarget, DefaultTargetReason: p.Detected.DefaultTargetReason},
	}
	if p.Path != "" {
		out.Profile = &p.Path
	}
	if p.Headless == nil {
		out.Headless = "auto"
	} else {
		out.Headless = *p.Headless
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
