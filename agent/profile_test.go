package agent

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/paddock-dev/paddock/filter"
)

// TestProfileMatchesFilter: the profile sends to the agent exactly what
// `paddock run`'s filter traps, with the same commands for fcntl and ioctl
// (TestProfileAgreesWithFilterProgram checks every argument condition),
// except what the runtime default refuses outright (the refusal stays); the
// runtime's refusals are EPERM.
func TestProfileMatchesFilter(t *testing.T) {
	p, err := Profile("/run/paddock/agent.sock", "meta")
	if err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != specs.ActAllow || p.ListenerPath != "/run/paddock/agent.sock" || p.ListenerMetadata != "meta" {
		t.Errorf("profile head = %v %q %q", p.DefaultAction, p.ListenerPath, p.ListenerMetadata)
	}
	denied := RuntimeDenied()
	notify := map[string]bool{}
	args := map[string][]uint64{}
	for _, s := range p.Syscalls {
		switch s.Action {
		case specs.ActNotify:
			for _, n := range s.Names {
				if slices.Contains(denied, n) {
					t.Errorf("%s is both refused and sent to the agent", n)
				}
				notify[n] = true
				for _, a := range s.Args {
					if a.Op == specs.OpMaskedEqual && a.Value == 0xffffffff {
						args[n] = append(args[n], a.ValueTwo)
					}
				}
			}
		case specs.ActErrno:
			conditional := slices.ContainsFunc(runtimeConditional(), func(r specs.LinuxSyscall) bool { return reflect.DeepEqual(r, s) })
			if !conditional && (s.ErrnoRet == nil || *s.ErrnoRet != 1 || !slices.Equal(s.Names, denied)) {
				t.Errorf("the runtime's refusals: %+v", s)
			}
			for _, n := range s.Names {
				if slices.ContainsFunc(filter.Trapped(FleetOptions()), func(f filter.Syscall) bool { return f.String() == n }) && !slices.Contains(denied, n) {
					t.Errorf("%s is trapped by the filter but refused by an argument rule of the profile", n)
				}
			}
		default:
			t.Errorf("unexpected action %s for %v", s.Action, s.Names)
		}
	}
	for _, s := range filter.Trapped(FleetOptions()) {
		want := !slices.Contains(denied, s.String())
		if notify[s.String()] != want {
			t.Errorf("%s: sent to the agent %v, want %v", s, notify[s.String()], want)
		}
		delete(notify, s.String())
		if _, values, ok := s.ArgFilter(); ok && want {
			var got []uint32
			for _, v := range args[s.String()] {
				got = append(got, uint32(v))
			}
			if !slices.Equal(got, values) {
				t.Errorf("%s: commands %v, the filter traps %v", s, got, values)
			}
		}
	}
	for n := range notify {
		t.Errorf("%s is sent to the agent but the filter does not trap it", n)
	}
	for _, exec := range []string{"execve", "execveat"} {
		if slices.ContainsFunc(p.Syscalls, func(s specs.LinuxSyscall) bool { return slices.Contains(s.Names, exec) }) {
			t.Errorf("%s is in the profile; fleet mode does not decide exec", exec)
		}
	}
}

func TestRenderProfile(t *testing.T) {
	p, err := Profile("/var/run/security-profiles-operator/paddock.sock", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"oci", "kubernetes"} {
		b, err := RenderProfile(p, format)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var back specs.LinuxSeccomp
		if err := dec.Decode(&back); err != nil {
			t.Fatalf("%s: the output does not decode strictly as linux.seccomp: %v", format, err)
		}
		if back.ListenerPath != p.ListenerPath || len(back.Syscalls) != len(p.Syscalls) {
			t.Errorf("%s: round trip changed the profile", format)
		}
	}
	b, err := RenderProfile(p, "spo")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kind: SeccompProfile\n", "apiVersion: security-profiles-operator.x-k8s.io/v1beta1\n",
		`listenerPath: "/var/run/security-profiles-operator/paddock.sock"`, `- action: "SCMP_ACT_NOTIFY"`, `- "kill"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("spo output lacks %q\n%s", want, b)
		}
	}
	errs := []struct {
		socket, format, want string
	}{
		{"/run/paddock/agent.sock", "spo", "accepts listener paths under /var/run/security-profiles-operator/ only"},
		{"/run/paddock/agent.sock", "yaml", `--format "yaml": want one of oci, kubernetes, spo`},
	}
	for _, e := range errs {
		p, _ := Profile(e.socket, "")
		if _, err := RenderProfile(p, e.format); err == nil || !strings.Contains(err.Error(), e.want) {
			t.Errorf("RenderProfile(%s, %s) error %v, want %q", e.socket, e.format, err, e.want)
		}
	}
	if _, err := Profile("agent.sock", ""); err == nil || !strings.Contains(err.Error(), "absolute path") {
		t.Errorf("a relative socket: %v", err)
	}
}
