package features

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"
)

// ia32 is what was found out about IA32 emulation.
type ia32 struct {
	state string // "on", "off", or "" when unknown
	from  string // where it was read, or why it is unknown
}

// readIA32 reads CONFIG_IA32_EMULATION from /proc/config.gz or
// /boot/config-RELEASE, and the ia32_emulation= boot parameter (Linux 6.7+)
// that overrides CONFIG_IA32_EMULATION_DEFAULT_DISABLED.
func readIA32(release string) ia32 {
	var cfg config
	var from string
	var errs []string
	paths := []string{configGzPath}
	if release != "" {
		paths = append(paths, "/boot/config-"+release)
	}
	for _, p := range paths {
		c, err := readConfig(p)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		cfg, from = c, p
		break
	}
	if from == "" {
		return ia32{from: strings.Join(errs, "; ")}
	}
	cmdline, _ := os.ReadFile("/proc/cmdline")
	return ia32State(cfg, from, string(cmdline))
}

// config is what parseConfig reads from a kernel config.
type config struct {
	ia32            bool // CONFIG_IA32_EMULATION=y
	defaultDisabled bool // CONFIG_IA32_EMULATION_DEFAULT_DISABLED=y
}

// readConfig reads a kernel config, gzip-compressed when path ends in .gz.
func readConfig(path string) (config, error) {
	f, err := os.Open(path)
	if err != nil {
		return config{}, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return config{}, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	}
	cfg, err := parseConfig(r)
	if err != nil {
		return config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// parseConfig reads the lines of a kernel .config that matter here.
func parseConfig(r io.Reader) (config, error) {
	var c config
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		switch strings.TrimSpace(sc.Text()) {
		case "CONFIG_IA32_EMULATION=y":
			c.ia32 = true
		case "CONFIG_IA32_EMULATION_DEFAULT_DISABLED=y":
			c.defaultDisabled = true
		}
	}
	if err := sc.Err(); err != nil {
		return config{}, fmt.Errorf("read kernel config: %w", err)
	}
	return c, nil
}

// ia32State combines the config read from `from` with the boot command
// line: ia32_emulation=BOOL overrides the built-in default.
func ia32State(c config, from, cmdline string) ia32 {
	if !c.ia32 {
		return ia32{state: "off", from: "CONFIG_IA32_EMULATION not set in " + from}
	}
	on, why := !c.defaultDisabled, "CONFIG_IA32_EMULATION=y in "+from
	if c.defaultDisabled {
		why += ", CONFIG_IA32_EMULATION_DEFAULT_DISABLED=y"
	}
	for _, w := range strings.Fields(cmdline) {
		if w == "--" {
			break // the rest is init's
		}
		if v, ok := strings.CutPrefix(w, "ia32_emulation="); ok {
			if b, ok := kernelBool(v); ok {
				on, why = b, why+", boot parameter "+w
			}
		}
	}
	if on {
		return ia32{state: "on", from: why}
	}
	return ia32{state: "off", from: why}
}

// kernelBool parses a boolean the way the kernel's kstrtobool does.
func kernelBool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "1", "y", "yes", "on", "true":
		return true, true
	case "0", "n", "no", "off", "false":
		return false, true
	}
	return false, false
}
