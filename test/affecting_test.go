package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// harmWithoutSignal: a foreign process started outside paddock, run by the
// same unprivileged user as the agent, keeps its nice value, CPU affinity,
// resource limits and I/O priority through renice, taskset, prlimit and
// ionice from inside (each refused with EPERM and paddock's message), and
// perf_event_open, process_madvise, migrate_pages and a PRIO_USER renice
// aimed at it are refused by paddock too; the same tools work on the
// agent's own child, and on itself (nice, prlimit of its own limits) with
// nothing asked. Without the traps the kernel lets a same-user process do
// all of the first four.
func harmWithoutSignal(t *testing.T, b backend) {
	b.require(t)
	for _, tool := range []string{"renice", "taskset", "prlimit", "ionice"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("needs %s (a Python nobody may run): %v", py, err)
	}
	dir := nobodyDir(t)
	f := nobodyStart(t, "sleep", "300")
	fp := itoa(f.Pid())
	before := foreignState(t, fp)
	// Python makes the calls no common tool makes: each prints its errno.
	calls := `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
pid = int(sys.argv[1])
def call(name, nr, *args):
    r = libc.syscall(nr, *args)
    # One write per line: under PYTHONUNBUFFERED, print writes the newline
    # apart, and a log line of paddock may come between (no quote: bash -c).
    os.write(1, ("%s=%s\n" % (name, "ok" if r >= 0 else os.strerror(ctypes.get_errno()))).encode())
attr = ctypes.create_string_buffer(128)
ctypes.c_uint32.from_buffer(attr, 0).value = 1    # PERF_TYPE_SOFTWARE
ctypes.c_uint32.from_buffer(attr, 4).value = 128  # size
call("perf", 298, attr, pid, -1, -1, 0)
fd = os.pidfd_open(pid)
iov = (ctypes.c_uint64 * 2)(0x10000, 4096)
call("madvise", 440, fd, iov, 1, 20, 0)           # MADV_COLD
mask = ctypes.c_ulong(1)
call("migrate", 256, pid, 64, ctypes.byref(mask), ctypes.byref(mask))`
	script := `renice -n 5 -p ` + fp + ` >/dev/null 2>&1; echo renice=$?
taskset -p 1 ` + fp + ` >/dev/null 2>&1; echo taskset=$?
prlimit --pid ` + fp + ` --nofile=7:7 >/dev/null 2>&1; echo prlimit=$?
ionice -c 3 -p ` + fp + ` >/dev/null 2>&1; echo ionice=$?
prlimit --pid ` + fp + ` --nofile >/dev/null 2>&1; echo prlimit-read=$?
renice -n 5 -u 65534 >/dev/null 2>&1; echo renice-user=$?
` + py + ` -c '` + calls + `' ` + fp + `
sleep 300 & c=$!
renice -n 5 -p $c >/dev/null && taskset -p 1 $c >/dev/null && prlimit --pid $c --nofile=7:7 && ionice -c 3 -p $c && echo own=ok
perf stat -e task-clock -p $c -- sleep 0.1 >/dev/null 2>&1; echo perf-own=$?
kill $c
nice -n 3 true && prlimit --nofile=100:100 true && echo self=ok`
	out, lines := b.nobodyRun(t, bins.paddock, dir, script)
	journal := filepath.Join(dir, "j.jsonl")
	wantLines(t, out, lines, "renice=1", "taskset=1", "prlimit=1", "ionice=1", "prlimit-read=0", "renice-user=1",
		"perf=Operation not permitted", "madvise=Operation not permitted", "migrate=Operation not permitted",
		"own=ok", "self=ok")
	// perf stat -p of the agent's own child, where perf is installed and
	// lets an unprivileged user watch its own processes.
	if _, err := exec.LookPath("perf"); err == nil {
		p, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
		if level, perr := strconv.Atoi(strings.TrimSpace(string(p))); err == nil && perr == nil && level <= 2 {
			wantLines(t, out, lines, "perf-own=0")
		}
	}
	for _, sc := range []string{"setpriority", "sched_setaffinity", "prlimit64", "ioprio_set", "perf_event_open", "process_madvise", "migrate_pages"} {
		if !strings.Contains(out, "paddock refused "+sc+" of ") {
			t.Errorf("no refusal message for %s\n%s", sc, out)
		}
		if j, _ := os.ReadFile(journal); !strings.Contains(string(j), `"syscall":"`+sc+`"`) {
			t.Errorf("no journal record for %s\n%s", sc, j)
		}
	}
	if after := foreignState(t, fp); after != before {
		t.Errorf("the foreign process changed:\nbefore %s\nafter  %s", before, after)
	}
	if !f.Alive(t) {
		t.Errorf("the foreign process died")
	}
}

// foreignState is what the tools above would change of process pid: its
// nice value, CPU affinity, open-files limit and I/O priority.
func foreignState(t *testing.T, pid string) string {
	t.Helper()
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	io, err := exec.Command("ionice", "-p", pid).Output()
	if err != nil {
		t.Fatalf("ionice -p %s: %v", pid, err)
	}
	// Field 19 of stat is the nice value (the 17th after the name).
	return "nice " + fields[16] + "; cpus " + procLine(t, pid, "status", "Cpus_allowed_list:") +
		"; " + procLine(t, pid, "limits", "Max open files") + "; io " + strings.TrimSpace(string(io))
}

// procLine returns the line of /proc/PID/FILE that starts with prefix,
// its fields joined by single spaces.
func procLine(t *testing.T, pid, file, prefix string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/" + file)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			return strings.Join(strings.Fields(l), " ")
		}
	}
	t.Fatalf("/proc/%s/%s has no line %q", pid, file, prefix)
	return ""
}
