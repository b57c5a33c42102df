package profile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/guard"
)

func TestParseValid(t *testing.T) {
	data := `# my workstation
name = "desktop"
total_vram_gb = 24
desktop_headroom_gb = 3.5
services_to_survive = ["display-manager", "sway", "user@*"]
headless = false
allow_opt_in = false
adoption = "outside"
pty = false
strict_wall = true
deputies_allowed = ["docker"]
`
	p, err := Parse("/etc/p.toml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "desktop" || *p.TotalVRAMGB != 24 || *p.DesktopHeadroomGB != 3.5 || *p.Headless || p.AllowOptIn || p.Adoption != AdoptFromOutside || p.Pty || !p.StrictWall {
		t.Errorf("values: %+v", p)
	}
	if !reflect.DeepEqual(p.ServicesToSurvive, []string{"display-manager", "sway", "user@*"}) {
		t.Errorf("services: %q", p.ServicesToSurvive)
	}
	want := map[string]string{
		"profile": "file", KeyName: "file /etc/p.toml:2", KeyTotalVRAMGB: "file /etc/p.toml:3",
		KeyDesktopHeadroomGB: "file /etc/p.toml:4", KeyServicesToSurvive: "file /etc/p.toml:5",
		KeyHeadless: "file /etc/p.toml:6", KeyAllowOptIn: "file /etc/p.toml:7", KeyAdoption: "file /etc/p.toml:8",
		KeyPty: "file /etc/p.toml:9", KeyStrictWall: "file /etc/p.toml:10", KeyDeputiesAllowed: "file /etc/p.toml:11",
	}
	if !reflect.DeepEqual(p.DeputiesAllowed, []string{"docker"}) {
		t.Errorf("deputies_allowed: %q", p.DeputiesAllowed)
	}
	if !reflect.DeepEqual(p.Sources, want) {
		t.Errorf("sources:\n got %v\nwant %v", p.Sources, want)
	}
	pol := p.GuardPolicy()
	if pol.AllowOptIn || pol.Profile != "/etc/p.toml" || !reflect.DeepEqual(pol.ServicesToSurvive, p.ServicesToSurvive) || pol.Supervised {
		t.Errorf("policy: %+v", pol)
	}
}

func TestParseDefaults(t *testing.T) {
	p, err := Parse("/p.toml", []byte("headless = \"auto\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Headless != nil || !p.AllowOptIn || p.Adoption != AdoptByAgent || !p.Pty || p.StrictWall || p.TotalVRAMGB != nil || p.DesktopHeadroomGB != nil || p.ServicesToSurvive != nil {
		t.Errorf("defaults: %+v", p)
	}
	if p.Sources[KeyHeadless] != "file /p.toml:1" || p.Sources[KeyAllowOptIn] != SourceDefault {
		t.Errorf("sources: %v", p.Sources)
	}
	if got := p.Services(); !reflect.DeepEqual(got, append(guard.DefaultServices(), guard.SessionUnits()...)) {
		t.Errorf("effective services: %q", got)
	}
	if _, err := Parse("/p.toml", nil); err != nil {
		t.Errorf("an empty file: %v", err)
	}
	if p, _ := Parse("/p.toml", []byte("total_vram_gb = 0\ndesktop_headroom_gb = 0\n")); *p.TotalVRAMGB != 0 {
		t.Errorf("zero VRAM (no GPU) is a value: %+v", p)
	}
}

// The effective list: the profile's own entries (or the defaults), the
// session units, less what "!" entries drop.
func TestServicesCombine(t *testing.T) {
	session := guard.SessionUnits()
	cases := []struct {
		name, list string
		want       []string
	}{
		{"own list keeps the session units", `["gdm", "pipewire"]`, append([]string{"gdm", "pipewire"}, session...)},
		{"a listed session unit is not repeated", `["gdm", "user@*"]`, append([]string{"gdm", "user@*"}, session[1:]...)},
		{"drops only: the defaults less the dropped", `["!sshd", "!app-*.scope"]`,
			append(guard.DefaultServices()[:16], session[:5]...)},
		{"a glob drops what it matches", `["gdm", "!*.scope"]`, []string{"gdm", "user@*.service", "graphical-session.target", "gnome-session*", "plasma-*"}},
		{"a drop with .service", `["gdm", "!user@*.service", "!plasma-*", "!gnome-session*"]`, []string{"gdm", "session-*.scope", "graphical-session.target", "app-*.scope"}},
		{"a drop of one unit leaves the glob", `["gdm", "!user@1000.service"]`, append([]string{"gdm"}, session...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("/p.toml", []byte("services_to_survive = "+tc.list+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Services(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("effective services:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, data string
		line       int
		key        string
		msg        string
	}{
		{"unknown key", "name = \"x\"\n\nnmae = \"y\"\n", 3, "nmae", "unknown key"},
		{"unknown key suggestion", "Total_VRAM_GB = 24\n", 1, "Total_VRAM_GB", "did you mean total_vram_gb?"},
		{"unknown table", "name = \"x\"\n[gpu]\ncount = 2\n", 2, "gpu", "unknown key"},
		{"table for a known key", "[name]\nx = 1\n", 1, "name", "not a table"},
		{"wrong type name", "name = 3\n", 1, "name", "want a string"},
		{"wrong type vram", "name = \"x\"\ntotal_vram_gb = \"24GB\"\n", 2, "total_vram_gb", `got the string "24GB"`},
		{"negative vram", "total_vram_gb = -8\n", 1, "total_vram_gb", "VRAM cannot be negative"},
		{"negative headroom", "desktop_headroom_gb = -1.5\n", 1, "desktop_headroom_gb", "cannot be negative"},
		{"nan", "total_vram_gb = nan\n", 1, "total_vram_gb", "finite"},
		{"headroom above total", "total_vram_gb = 8\n# comment\ndesktop_headroom_gb = 12\n", 3, "desktop_headroom_gb", "12 GB of desktop headroom is more than the 8 GB of total_vram_gb (file /x/p.toml:1)"},
		{"services not a list", "services_to_survive = \"gdm\"\n", 1, "services_to_survive", "want a list"},
		{"services empty", "services_to_survive = []\n", 1, "services_to_survive", "is empty"},
		{"services wrong entry", "services_to_survive = [\"gdm\", 3]\n", 1, "services_to_survive", "entry 2"},
		{"services bad name", "services_to_survive = [\"gdm sddm\"]\n", 1, "services_to_survive", "not a unit name"},
		{"services bare drop", "services_to_survive = [\"gdm\", \"!\"]\n", 1, "services_to_survive", `entry 2: "!" drops nothing. Way out:`},
		{"services double drop", "services_to_survive = [\"!!gdm\"]\n", 1, "services_to_survive", `"!!gdm" drops nothing`},
		{"headless string", "headless = \"maybe\"\n", 1, "headless", `want "auto", true or false`},
		{"headless number", "headless = 1\n", 1, "headless", `want "auto", true or false`},
		{"allow_opt_in string", "allow_opt_in = \"yes\"\n", 1, "allow_opt_in", "want true or false"},
		{"adoption unknown", "adoption = \"nobody\"\n", 1, "adoption", `want "agent" (the agent may adopt, with a reason), "outside" (only from outside the session) or "off"; got the string "nobody"`},
		{"adoption not a string", "adoption = false\n", 1, "adoption", `want "agent"`},
		{"pty not a bool", "pty = \"no\"\n", 1, "pty", `want true (the agent on a pty of its own) or false (on the user's terminal); got the string "no"`},
		{"deputies_allowed not a list", "deputies_allowed = \"docker\"\n", 1, "deputies_allowed", `want a list of the container engines whose API socket the agent may use, of "docker" and "podman"; got the string "docker"`},
		{"deputies_allowed unknown engine", "deputies_allowed = [\"tmux\"]\n", 1, "deputies_allowed", `of "docker" and "podman"; got the string "tmux"`},
		{"syntax", "name = \"x\ntotal_vram_gb = 1\n", 1, "", "not valid TOML"},
		{"duplicate", "name = \"a\"\nname = \"b\"\n", 2, "", "not valid TOML"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/x/p.toml", []byte(tc.data))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want *Error", err)
			}
			if pe.Path != "/x/p.toml" || pe.Line != tc.line || (tc.key != "" && pe.Key != tc.key) {
				t.Errorf("got path %q line %d key %q, want line %d key %q", pe.Path, pe.Line, pe.Key, tc.line, tc.key)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("message %q lacks %q", err, tc.msg)
			}
			prefix := "profile /x/p.toml:"
			if tc.key != "" {
				prefix = "profile /x/p.toml:" + itoa(tc.line) + ": " + tc.key + ": "
			}
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("message %q does not start with %q", err, prefix)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestLoadResolution(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flag := write(filepath.Join(dir, "flag.toml"), "name = \"flag\"\n")
	env := write(filepath.Join(dir, "env.toml"), "name = \"env\"\n")
	xdg := filepath.Join(dir, "xdg")
	write(filepath.Join(xdg, "paddock", "profile.toml"), "name = \"xdg\"\n")
	home := filepath.Join(dir, "home")
	write(filepath.Join(home, ".config", "paddock", "profile.toml"), "name = \"home\"\n")
	getenv := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	cases := []struct {
		name, flag string
		env        map[string]string
		home       string
		want, src  string
	}{
		{"flag wins", flag, map[string]string{"PADDOCK_PROFILE": env, "XDG_CONFIG_HOME": xdg}, home, "flag", SourceFlag},
		{"env next", "", map[string]string{"PADDOCK_PROFILE": env, "XDG_CONFIG_HOME": xdg}, home, "env", SourceEnv},
		{"xdg next", "", map[string]string{"XDG_CONFIG_HOME": xdg}, home, "xdg", SourceDefaultPath},
		{"home without xdg", "", nil, home, "home", SourceDefaultPath},
		{"relative xdg is ignored", "", map[string]string{"XDG_CONFIG_HOME": "rel"}, home, "home", SourceDefaultPath},
		{"none", "", map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "empty")}, home, "", SourceNone + " (no " + filepath.Join(dir, "empty", "paddock", "profile.toml") + ")"},
		{"no home", "", nil, "", "", SourceNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Load(tc.flag, getenv(tc.env), tc.home)
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != tc.want || p.Sources["profile"] != tc.src {
				t.Errorf("got name %q source %q, want %q %q", p.Name, p.Sources["profile"], tc.want, tc.src)
			}
			if p.Sources[KeyHeadless] != SourceDetected {
				t.Errorf("headless source %q, want detected", p.Sources[KeyHeadless])
			}
		})
	}
	for _, tc := range []struct{ name, flag, env string }{
		{"missing flag file", filepath.Join(dir, "nope.toml"), ""},
		{"missing env file", "", filepath.Join(dir, "nope.toml")},
		{"directory", dir, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.flag, getenv(map[string]string{"PADDOCK_PROFILE": tc.env}), home)
			var pe *Error
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), "cannot read it") || !strings.Contains(err.Error(), "Way out") {
				t.Fatalf("got %v", err)
			}
		})
	}
	bad := write(filepath.Join(dir, "bad", "paddock", "profile.toml"), "total_vram_gb = -1\n")
	if _, err := Load("", getenv(map[string]string{"XDG_CONFIG_HOME": filepath.Join(dir, "bad")}), home); err == nil || !strings.Contains(err.Error(), bad+":1: total_vram_gb") {
		t.Errorf("a bad file at the default location: %v", err)
	}
}

func TestDetect(t *testing.T) {
	root := t.TempDir()
	none := func(string) string { return "" }
	f := Detect(none, root)
	if !f.Headless || f.DefaultTarget != "" {
		t.Errorf("empty root: %+v", f)
	}
	if err := os.MkdirAll(filepath.Join(root, "etc/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/lib/systemd/system/multi-user.target", filepath.Join(root, "etc/systemd/system/default.target")); err != nil {
		t.Fatal(err)
	}
	if f := Detect(none, root); f.DefaultTarget != "multi-user.target" || !f.Headless {
		t.Errorf("server: %+v", f)
	}
	if f := Detect(func(k string) string {
		if k == "WAYLAND_DISPLAY" {
			return "wayland-0"
		}
		return ""
	}, root); f.Headless || !strings.Contains(f.HeadlessReason, "WAYLAND_DISPLAY") {
		t.Errorf("wayland session: %+v", f)
	}
	if err := os.Symlink("/usr/lib/systemd/system/gdm.service", filepath.Join(root, "etc/systemd/system/display-manager.service")); err != nil {
		t.Fatal(err)
	}
	if f := Detect(none, root); f.Headless {
		t.Errorf("display manager enabled: %+v", f)
	}
	p := Profile{Detected: Facts{DefaultTarget: "graphical.target", Headless: true, HeadlessReason: "r"}, Sources: map[string]string{}}
	if pol := p.GuardPolicy(); pol.DefaultTarget != "graphical.target" {
		t.Errorf("policy: %+v", pol)
	}
	if h, why := p.IsHeadless(); !h || why != "r" {
		t.Errorf("IsHeadless: %v %q", h, why)
	}
}

// Keys the file quotes are quoted in errors too, on the line that defines
// them: a key may hold a newline, an escape sequence or a comma.
func TestParseErrorKeys(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"newline in key", "name = \"x\"\n\"a\\nb\" = 2\n", `profile /x/p.toml:2: "a\nb": unknown key.`},
		{"escape sequence in key", "\"\\u001b[2J\" = 1\n", `profile /x/p.toml:1: "\x1b[2J": unknown key.`},
		{"comma in key", "total_vram_gb = 1\n\"total_vram_gb,x\" = 1\n", `profile /x/p.toml:2: "total_vram_gb,x": unknown key.`},
		{"dash key", "name = \"a-b\"\n- = 1\n", `profile /x/p.toml:2: -: unknown key.`},
		{"empty key", "name = \"x\"\n\"\" = 1\n", `profile /x/p.toml:2: unknown key "" (an empty quoted key).`},
		{"dotted key", "gpu.count = 1\n", `profile /x/p.toml:1: gpu: unknown key.`},
		{"key differing only in case", "name = \"x\"\nnAme = \"y\"\n", `profile /x/p.toml:2: nAme: unknown key (did you mean name?).`},
		{"multi-line value", "0='''\nx\n'''", `profile /x/p.toml:1: 0: unknown key.`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/x/p.toml", []byte(tc.data))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q, want it to start with %q", err, tc.want)
			}
		})
	}
}

// A value spanning lines is sourced from the line of its key.
func TestParseSourceOfMultilineValue(t *testing.T) {
	p, err := Parse("/x/p.toml", []byte("name = \"\"\"\ndesk\ntop\"\"\"\nheadless = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Sources[KeyName] != "file /x/p.toml:1" || p.Sources[KeyHeadless] != "file /x/p.toml:4" {
		t.Errorf("sources: %v", p.Sources)
	}
}
