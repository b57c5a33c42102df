// Package profile reads paddock's host profile: a small TOML file that says
// what this machine is (name, GPU memory, how much of it the desktop keeps,
// which services must survive, whether it is headless) and whether explicit
// opt-ins are honoured.
//
// The file is found at --profile FILE, else $PADDOCK_PROFILE, else
// $XDG_CONFIG_HOME/paddock/profile.toml (~/.config/paddock/profile.toml
// when XDG_CONFIG_HOME is unset); with none, detected and default values
// apply. Unknown keys, wrong types and impossible values are errors that
// name the file, the line and the key: paddock does not start on a profile
// it cannot trust.
package profile

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/BurntSushi/toml"

	"github.com/paddock-dev/paddock/guard"
)

// Keys of the profile file.
const (
	KeyName              = "name"
	KeyTotalVRAMGB       = "total_vram_gb"
	KeyDesktopHeadroomGB = "desktop_headroom_gb"
	KeyServicesToSurvive = "services_to_survive"
	KeyHeadless          = "headless"
	KeyAllowOptIn        = "allow_opt_in"
	KeyAdoption          = "adoption"
	KeyPty               = "pty"
	KeyStrictWall        = "strict_wall"
	KeyDeputiesAllowed   = "deputies_allowed"
)

// Adoption modes: who may adopt a process into a session (key adoption).
const (
	// AdoptByAgent: anyone who may use the control socket, the agent
	// included, with a reason (the default, and the seed's behaviour).
	AdoptByAgent = "agent"
	// AdoptFromOutside: only from outside the session (the user's own
	// terminal, a script of theirs, root); the agent's requests are refused.
	AdoptFromOutside = "outside"
	// AdoptOff: no adoption at all.
	AdoptOff = "off"
)

// keys lists the profile keys in the order paddock prints them, in a fresh
// slice.
func keys() []string {
	return []string{KeyName, KeyTotalVRAMGB, KeyDesktopHeadroomGB, KeyServicesToSurvive, KeyHeadless, KeyAllowOptIn, KeyAdoption, KeyPty, KeyStrictWall, KeyDeputiesAllowed}
}

// Sources: where a value came from (Profile.Sources values; file values are
// "file PATH:LINE").
const (
	SourceDefault  = "default"
	SourceDetected = "detected"
	// Sources["profile"], where the file's path came from:
	SourceFlag        = "flag --profile"
	SourceEnv         = "env PADDOCK_PROFILE"
	SourceDefaultPath = "default location"
	SourceNone        = "none"
)

// Profile is the effective host profile.
type Profile struct {
	Name string
	// TotalVRAMGB is the GPU memory in GB; nil: not set (the VRAM preflight
	// detects it).
	TotalVRAMGB *float64
	// DesktopHeadroomGB is the GPU memory the desktop keeps; nil: not set
	// (the VRAM preflight's default applies).
	DesktopHeadroomGB *float64
	// ServicesToSurvive is the profile's list as written, "!" entries
	// included; nil: guard.DefaultServices. Services gives the effective list.
	ServicesToSurvive []string
	// Headless: nil = auto (see Detected).
	Headless   *bool
	AllowOptIn bool
	// Adoption says who may adopt processes into a session: AdoptByAgent
	// (default), AdoptFromOutside or AdoptOff.
	Adoption string
	// Pty: on a terminal, paddock run puts the agent on a pty of its own
	// (the default); false keeps it on the user's terminal, as
	// `paddock run --no-pty` does.
	Pty bool
	// StrictWall: paddock run starts the agent behind the strict wall, as
	// `paddock run --strict-wall` does (default false).
	StrictWall bool
	// DeputiesAllowed lists the container engines whose API sockets the
	// agent may talk to ("docker", "podman"; default none: the default
	// wall refuses their connects, docs/deputies.md).
	DeputiesAllowed []string
	// Sources maps each key, and "profile" (the file's path), to where its
	// value came from: "file PATH:LINE", "env PADDOCK_PROFILE", "flag
	// --profile", "detected", "default".
	Sources map[string]string
	// Path is the profile file read, "" when none.
	Path string
	// Detected holds the facts Load found on this host (Parse leaves it zero).
	Detected Facts
}

// Facts are detected, not configured.
type Facts struct {
	Headless       bool
	HeadlessReason string
	// DefaultTarget is what `systemctl get-default` would say, "" if unknown.
	DefaultTarget       string
	DefaultTargetReason string
}

// Error is a profile that paddock refuses: it names the file, line and key.
type Error struct {
	Path string
	Line int    // 0 when unknown
	Key  string // "" for a file-level problem
	Msg  string
}

// displayKey shows a key as the file can spell it: a bare key (or a dotted
// path of them, as the TOML reader reports a nested key) as itself, any
// other quoted, so that a key holding a newline or an escape sequence cannot
// split the message or act on a terminal.
func displayKey(k string) string {
	for _, part := range strings.Split(k, ".") {
		if !isBareKey(part) {
			return strconv.Quote(k)
		}
	}
	return k
}

// printable escapes, as in a Go string literal, what a terminal would not
// show as itself (the TOML reader's messages quote the file's bytes, a
// newline included), so that an error stays one line.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsPrint(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// isBareKey reports whether k is a TOML bare key: A-Za-z0-9_- only.
func isBareKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("profile ")
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		b.WriteString(": ")
		b.WriteString(displayKey(e.Key))
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Defaults returns the profile used when no file is found.
func Defaults() Profile {
	p := Profile{AllowOptIn: true, Adoption: AdoptByAgent, Pty: true, Sources: map[string]string{"profile": SourceNone}}
	for _, k := range keys() {
		p.Sources[k] = SourceDefault
	}
	return p
}

// Load finds the profile (flag, $PADDOCK_PROFILE, $XDG_CONFIG_HOME or
// ~/.config), parses it, and detects the host facts. A file named by the
// flag or the environment must exist; an absent file at the default
// location means defaults.
func Load(flagValue string, getenv func(string) string, home string) (Profile, error) {
	p, err := load(flagValue, getenv, home)
	if err != nil {
		return p, err
	}
	p.Detected = Detect(getenv, "/")
	if p.Headless == nil {
		p.Sources[KeyHeadless] = SourceDetected
	}
	return p, nil
}

func load(flagValue string, getenv func(string) string, home string) (Profile, error) {
	path, src := "", SourceNone
	switch {
	case flagValue != "":
		path, src = flagValue, SourceFlag
	case getenv("PADDOCK_PROFILE") != "":
		path, src = getenv("PADDOCK_PROFILE"), SourceEnv
	default:
		if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
			path = filepath.Join(x, "paddock", "profile.toml")
		} else if home != "" {
			path = filepath.Join(home, ".config", "paddock", "profile.toml")
		}
		src = SourceDefaultPath
	}
	if path == "" {
		return Defaults(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if src == SourceDefaultPath && errors.Is(err, fs.ErrNotExist) {
			p := Defaults()
			p.Sources["profile"] = SourceNone + " (no " + path + ")"
			return p, nil
		}
		msg := err.Error()
		if pe, ok := err.(*fs.PathError); ok {
			msg = pe.Err.Error()
		}
		return Profile{}, &Error{Path: path, Msg: fmt.Sprintf("cannot read it (%s; named by %s). Way out: fix the path, or unset it to use %s.",
			msg, src, defaultPathHint(getenv, home))}
	}
	p, err := Parse(path, data)
	if err != nil {
		return p, err
	}
	p.Sources["profile"] = src
	return p, nil
}

func defaultPathHint(getenv func(string) string, home string) string {
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "paddock", "profile.toml")
	}
	if home != "" {
		return filepath.Join(home, ".config", "paddock", "profile.toml")
	}
	return "the defaults"
}

// Parse reads a profile file's contents; path is used in errors and
// sources.
func Parse(path string, data []byte) (Profile, error) {
	p := Defaults()
	p.Path = path
	p.Sources["profile"] = "file"
	text := string(data)
	var raw map[string]any
	md, err := toml.Decode(text, &raw)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return Profile{}, &Error{Path: path, Line: pe.Position.Line, Key: pe.LastKey,
				Msg: "not valid TOML: " + printable(pe.Message) + ". Way out: fix the syntax (a line is `key = value`; strings in quotes)."}
		}
		return Profile{}, &Error{Path: path, Msg: "not valid TOML: " + printable(err.Error())}
	}
	// Unknown keys first, in file order.
	for _, k := range md.Keys() {
		top := k[0]
		if !isKey(top) {
			what := "unknown key" + suggest(top)
			if top == "" {
				what = `unknown key "" (an empty quoted key)`
			}
			return Profile{}, &Error{Path: path, Line: keyLine(text, top), Key: top,
				Msg: fmt.Sprintf("%s. Way out: the keys are %s.", what, strings.Join(keys(), ", "))}
		}
		if len(k) > 1 {
			return Profile{}, &Error{Path: path, Line: keyLine(text, top), Key: top, Msg: "must be a plain value, not a table"}
		}
	}
	// Every key left is a known one: find each one's line once (each look
	// decodes the file again).
	lines := make(map[string]int, len(raw))
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
		lines[k] = keyLine(text, k)
	}
	sort.Slice(keys, func(i, j int) bool { return lines[keys[i]] < lines[keys[j]] })
	bad := func(key, msg string) error {
		return &Error{Path: path, Line: lines[key], Key: key, Msg: msg}
	}
	src := func(key string) string {
		if l := lines[key]; l > 0 {
			return fmt.Sprintf("file %s:%d", path, l)
		}
		return "file " + path
	}
	for _, key := range keys {
		v := raw[key]
		switch key {
		case KeyName:
			s, ok := v.(string)
			if !ok {
				return Profile{}, bad(key, "want a string, like name = \"desktop\"; got "+describe(v))
			}
			p.Name = s
		case KeyTotalVRAMGB, KeyDesktopHeadroomGB:
			f, err := gigabytes(key, v)
			if err != nil {
				return Profile{}, bad(key, err.Error())
			}
			if key == KeyTotalVRAMGB {
				p.TotalVRAMGB = &f
			} else {
				p.DesktopHeadroomGB = &f
			}
		case KeyServicesToSurvive:
			list, err := services(v)
			if err != nil {
				return Profile{}, bad(key, err.Error())
			}
			p.ServicesToSurvive = list
		case KeyHeadless:
			switch x := v.(type) {
			case bool:
				p.Headless = &x
			case string:
				if x != "auto" {
					return Profile{}, bad(key, fmt.Sprintf("want \"auto\", true or false; got %q", x))
				}
			default:
				return Profile{}, bad(key, "want \"auto\", true or false; got "+describe(v))
			}
		case KeyAllowOptIn:
			b, ok := v.(bool)
			if !ok {
				return Profile{}, bad(key, "want true or false; got "+describe(v))
			}
			p.AllowOptIn = b
		case KeyAdoption:
			a, ok := v.(string)
			if !ok || (a != AdoptByAgent && a != AdoptFromOutside && a != AdoptOff) {
				return Profile{}, bad(key, fmt.Sprintf("want %q (the agent may adopt, with a reason), %q (only from outside the session) or %q; got %s", AdoptByAgent, AdoptFromOutside, AdoptOff, describe(v)))
			}
			p.Adoption = a
		case KeyPty:
			b, ok := v.(bool)
			if !ok {
				return Profile{}, bad(key, "want true (the agent on a pty of its own) or false (on the user's terminal); got "+describe(v))
			}
			p.Pty = b
		case KeyStrictWall:
			b, ok := v.(bool)
			if !ok {
				return Profile{}, bad(key, "want true (the kernel also refuses the agent writes to /proc/PID and cgroup files, and mount(2), as paddock run --strict-wall) or false; got "+describe(v))
			}
			p.StrictWall = b
		case KeyDeputiesAllowed:
			list, ok := v.([]any)
			want := `want a list of the container engines whose API socket the agent may use, of "docker" and "podman"; got `
			if !ok {
				return Profile{}, bad(key, want+describe(v))
			}
			p.DeputiesAllowed = nil
			for _, e := range list {
				name, ok := e.(string)
				if !ok || (name != "docker" && name != "podman") {
					return Profile{}, bad(key, want+describe(e))
				}
				p.DeputiesAllowed = append(p.DeputiesAllowed, name)
			}
		}
		p.Sources[key] = src(key)
	}
	if p.TotalVRAMGB != nil && p.DesktopHeadroomGB != nil && *p.DesktopHeadroomGB > *p.TotalVRAMGB {
		return Profile{}, bad(KeyDesktopHeadroomGB, fmt.Sprintf(
			"%s GB of desktop headroom is more than the %s GB of total_vram_gb (%s). Way out: set desktop_headroom_gb to at most total_vram_gb.",
			num(*p.DesktopHeadroomGB), num(*p.TotalVRAMGB), src(KeyTotalVRAMGB)))
	}
	return p, nil
}

func isKey(k string) bool {
	for _, x := range keys() {
		if x == k {
			return true
		}
	}
	return false
}

// suggest names the known key an unknown one was probably meant to be.
func suggest(k string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("-", "", "_", "", " ", "").Replace(s))
	}
	for _, x := range keys() {
		if norm(x) == norm(k) {
			return fmt.Sprintf(" (did you mean %s?)", x)
		}
	}
	return ""
}

func gigabytes(key string, v any) (float64, error) {
	var f float64
	switch x := v.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		return 0, fmt.Errorf("want a number of gigabytes, like %s = 24 or 23.5; got %s", key, describe(v))
	}
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("want a finite number of gigabytes; got %v", f)
	case f < 0:
		if key == KeyTotalVRAMGB {
			return 0, fmt.Errorf("%s GB: VRAM cannot be negative. Way out: set it to the GPU memory in GB (nvidia-smi --query-gpu=memory.total --format=csv), or remove the key to have it detected", num(f))
		}
		return 0, fmt.Errorf("%s GB: headroom cannot be negative. Way out: set it to the GB the desktop keeps (0 or more)", num(f))
	}
	return f, nil
}

func services(v any) ([]string, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of unit names, like [\"gdm\", \"pipewire\"]; got %s", describe(v))
	}
	if len(arr) == 0 {
		return nil, errors.New("is empty. Way out: remove the key to protect paddock's defaults, or list the units that must survive (globs like \"user@*\" work)")
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("entry %d: want a unit name string; got %s", i+1, describe(e))
		}
		if s == "" || strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == '/' || r == 0x7f }) >= 0 {
			return nil, fmt.Errorf("entry %d: %q is not a unit name", i+1, s)
		}
		if t, ok := strings.CutPrefix(s, "!"); ok && (t == "" || strings.HasPrefix(t, "!")) {
			return nil, fmt.Errorf("entry %d: %q drops nothing. Way out: write \"!\" and then the unit or glob to drop, like \"!app-*.scope\"", i+1, s)
		}
		out = append(out, s)
	}
	return out, nil
}

func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", x)
	case int64:
		return fmt.Sprintf("the integer %d", x)
	case float64:
		return fmt.Sprintf("the number %v", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case []any, []map[string]any:
		return "a list"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("a %T", v)
}

func num(f float64) string { return fmt.Sprintf("%g", f) }

// lineProbe fails to decode on purpose: the decoder's error carries the
// line of the key it was decoding.
type lineProbe struct{}

var errProbe = errors.New("probe")

func (lineProbe) UnmarshalTOML(any) error { return errProbe }

// keyLine returns the line where top-level key k is defined, 0 if unknown.
func keyLine(text, k string) int {
	lines := strings.Split(text, "\n")
	// The probe spells k in a struct tag, where a comma starts the options
	// and "-" means no key at all: only keys without those (and without
	// quotes or control characters) can be probed.
	if k != "" && k != "-" && strings.IndexFunc(k, func(r rune) bool { return strings.ContainsRune("\"`\\,", r) || r < ' ' || r == 0x7f }) < 0 {
		t := reflect.StructOf([]reflect.StructField{{
			Name: "F", Type: reflect.TypeOf(lineProbe{}), Tag: reflect.StructTag(`toml:"` + k + `"`),
		}})
		_, err := toml.Decode(text, reflect.New(t).Interface())
		var pe toml.ParseError
		if errors.As(err, &pe) && pe.Position.Line > 0 && pe.Position.Line <= len(lines) {
			// The probe names the line where the value ends (a multi-line
			// string ends lines later): the key is on the last line up to
			// there that starts with it. None does when the probe matched
			// another key that differs only in case (the TOML reader
			// matches tags that way): then search as below.
			for i := pe.Position.Line; i >= 1; i-- {
				if startsWithKey(lines[i-1], k) {
					return i
				}
			}
		}
	}
	// Else the first line that starts with the key, then the first that
	// holds it at all.
	for i, l := range lines {
		if startsWithKey(l, k) {
			return i + 1
		}
	}
	if k != "" {
		for i, l := range lines {
			if strings.Contains(l, k) {
				return i + 1
			}
		}
	}
	return 0
}

// startsWithKey reports whether line defines key k, bare or quoted, as a
// key = value line, a dotted key or a table header.
func startsWithKey(line, k string) bool {
	l := strings.TrimLeft(line, "[ \t")
	spellings := []string{strconv.Quote(k), tomlQuote(k, "\\u%04x"), tomlQuote(k, "\\u%04X"), "'" + k + "'"}
	if isBareKey(k) {
		spellings = append(spellings, k)
	}
	for _, sp := range spellings {
		if rest, ok := strings.CutPrefix(l, sp); ok && (rest == "" || strings.ContainsAny(rest[:1], " \t=.]")) {
			return true
		}
	}
	return false
}

// tomlQuote spells k as a TOML basic string, control characters escaped
// with format (\u%04x or \u%04X) unless they have a short escape.
func tomlQuote(k, format string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range k {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < ' ' || r == 0x7f {
				fmt.Fprintf(&b, format, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// GuardPolicy is what the command guard needs from the profile. Supervised
// is left false: the caller knows whether a supervisor decides kills.
func (p Profile) GuardPolicy() guard.Policy {
	return guard.Policy{
		ServicesToSurvive: append([]string(nil), p.ServicesToSurvive...),
		AllowOptIn:        p.AllowOptIn,
		DefaultTarget:     p.Detected.DefaultTarget,
		Profile:           p.Path,
	}
}

// IsHeadless is the effective headless setting: the profile's, else the
// detected one. The reason says which.
func (p Profile) IsHeadless() (bool, string) {
	if p.Headless != nil {
		return *p.Headless, p.Sources[KeyHeadless]
	}
	return p.Detected.Headless, p.Detected.HeadlessReason
}

// Services is the effective protected list: services_to_survive's entries
// (or guard.DefaultServices when it lists none that protect) and the
// session units (guard.SessionUnits), less what its "!" entries drop (see
// guard.EffectiveServices).
func (p Profile) Services() []string {
	return guard.EffectiveServices(p.ServicesToSurvive)
}
