package procfs

import (
	"os"
	"os/exec"
	"testing"
)

// Liveness tells a running process from one that is gone by pid and start
// time within a boot and a PID namespace, calls another boot's gone, and
// will not judge across PID namespaces.
func TestLiveness(t *testing.T) {
	fs := Default()
	self, err := fs.Self()
	if err != nil {
		t.Fatal(err)
	}
	if self.Pid != os.Getpid() || self.StartTime == 0 || self.BootID == "" {
		t.Fatalf("Self() = %+v", self)
	}
	if self.PidNS == 0 {
		t.Skip("/proc is not this process's PID namespace's")
	}
	// A child that has exited and been reaped: gone.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("needs true: %v", err)
	}
	exited := self
	exited.Pid = cmd.Process.Pid
	parent, err := fs.Stat(os.Getppid())
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(*Identity)) Identity {
		id := self
		f(&id)
		return id
	}
	tests := []struct {
		name string
		id   Identity
		want Liveness
	}{
		{"itself", self, Running},
		{"its parent", with(func(id *Identity) { id.Pid, id.StartTime = parent.Pid, parent.StartTime }), Running},
		{"its parent's pid, another start", with(func(id *Identity) { id.Pid, id.StartTime = parent.Pid, parent.StartTime+1 }), Gone},
		{"its own pid, another start", with(func(id *Identity) { id.StartTime++ }), Gone},
		{"a reaped child", exited, Gone},
		{"another boot", with(func(id *Identity) { id.BootID = "another" }), Gone},
		{"another boot, another namespace", with(func(id *Identity) { id.BootID, id.PidNS = "another", 1 }), Gone},
		{"another PID namespace", with(func(id *Identity) { id.PidNS++ }), Unknown},
		{"namespace not known", with(func(id *Identity) { id.PidNS = 0 }), Unknown},
		{"no pid", with(func(id *Identity) { id.Pid = 0 }), Unknown},
	}
	for _, tc := range tests {
		if got := fs.Liveness(tc.id, self); got != tc.want {
			t.Errorf("%s: Liveness(%+v) = %v, want %v", tc.name, tc.id, got, tc.want)
		}
	}
	// Judged by a process that cannot vouch for its own namespace: unknown.
	blind := self
	blind.PidNS = 0
	if got := fs.Liveness(self, blind); got != Unknown {
		t.Errorf("Liveness seen without a namespace = %v, want unknown", got)
	}
}
