package main

import (
	"os"

	"github.com/paddock-dev/paddock/profile"
	"github.com/paddock-dev/paddock/vram"
)

// loadProfile reads the host profile named by --profile, $PADDOCK_PROFILE or
// the default location. A broken profile is an error: paddock stops before
// anything starts.
func loadProfile(flagValue string) (profile.Profile, error) {
	home, _ := os.UserHomeDir()
	return profile.Load(flagValue, os.Getenv, home)
}

// vramSettings are the profile's VRAM keys as the vram package takes them.
func vramSettings(p profile.Profile) vram.Settings {
	return vram.Settings{TotalGB: p.TotalVRAMGB, HeadroomGB: p.DesktopHeadroomGB, Headless: p.Headless, AllowOptIn: p.AllowOptIn}
}

// hostBudget detects the GPUs and computes the VRAM budget for settings s.
// Detection problems are notes on the budget, never a failure: a host
// without a GPU gets the conservative defaults.
func hostBudget(src vram.Sources, s vram.Settings) (vram.Budget, error) {
	h, err := vram.Detect(src, s.Headless)
	return vram.NewBudget(h, s), err
}
