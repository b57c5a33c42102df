package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// maxErrLen bounds every parse error: they quote at most 80 bytes of a file
// that a hostile process may have shaped (its comm, its argv), whatever the
// file's size.
const maxErrLen = 512

// checkErr holds a parse error to the contract: it names what failed and
// stays bounded.
func checkErr(t *testing.T, err error, prefix string) {
	t.Helper()
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("error %q does not start with %q", err, prefix)
	}
	if len(err.Error()) > maxErrLen {
		t.Fatalf("error of %d bytes, past %d: %.200q...", len(err.Error()), maxErrLen, err)
	}
}

// kernelStat formats a stat line the way fs/proc/array.c do_task_stat
// does: pid, "(comm)" unescaped, state, then the numeric fields 4..52.
func kernelStat(s Stat) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d (%s) %c %d %d %d %d %d %d", s.Pid, s.Comm, s.State, s.PPid, s.Pgrp, s.Session, int32(s.TtyNr), s.Pgrp, s.Flags)
	for f := 10; f <= 52; f++ {
		switch f {
		case 22:
			fmt.Fprintf(&b, " %d", s.StartTime)
		case 19:
			b.WriteString(" -20") // nice: negative numbers occur
		default:
			fmt.Fprintf(&b, " %d", f*7)
		}
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// FuzzParseStat: a stat line's comm is the process's own choice (up to 64
// bytes, any byte, ')' and '\n' included, printed unescaped). Any comm and
// any field values must come back exactly from a kernel-formatted line; any
// bytes at all must parse without panic, with a bounded error or a result
// consistent with the first '(' and the last ')'.
func FuzzParseStat(f *testing.F) {
	f.Add("sleep", uint32(42), byte(1), uint32(7), uint32(42), uint32(7), uint32(4194560), uint64(987654), []byte("42 (sleep) S 7 42 7 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 987654 1000 2\n"))
	f.Add("a) b (c) d", uint32(9), byte(0), uint32(1), uint32(9), uint32(9), uint32(PFKthread), uint64(55), []byte("9 (x) S z 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 55 0 0"))
	f.Add("x) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 (", uint32(1), byte(2), uint32(0), uint32(0), uint32(0), uint32(0), uint64(1), []byte("1 () R"))
	f.Add("new\nline", uint32(4194304), byte(3), uint32(1), uint32(1), uint32(1), uint32(0), uint64(1<<63), []byte("99999999999999999999999 (x) S 1"))
	f.Add("", uint32(0), byte(4), uint32(0), uint32(0), uint32(0), uint32(0), uint64(0), []byte("(("))
	f.Fuzz(func(t *testing.T, comm string, pid uint32, state byte, ppid, pgrp, session, flags uint32, start uint64, raw []byte) {
		// tty_nr: a pty's device number (major 136), from the pid's bits.
		want := Stat{Pid: int(pid), Comm: comm, State: "RSDTtXZPI"[int(state)%9], PPid: int(ppid), Pgrp: int(pgrp), Session: int(session),
			TtyNr: uint64(136<<8 | pid&0xff | (pid&0xfff00)<<12), Flags: uint64(flags), StartTime: start}
		line := kernelStat(want)
		got, err := ParseStat(line)
		if err != nil || got != want {
			t.Fatalf("ParseStat(%q) = %+v, %v; want %+v", line, got, err, want)
		}

		got, err = ParseStat(raw)
		if err != nil {
			checkErr(t, err, "parse stat: ")
			return
		}
		open, closeIdx := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
		if open < 0 || closeIdx < open || got.Comm != string(raw[open+1:closeIdx]) {
			t.Fatalf("ParseStat(%q) comm %q is not what the first '(' and the last ')' enclose", raw, got.Comm)
		}
		if p, err := strconv.Atoi(string(bytes.TrimSpace(raw[:open]))); err != nil || p != got.Pid {
			t.Fatalf("ParseStat(%q) pid %d, want %d (%v)", raw, got.Pid, p, err)
		}
	})
}

// kernelStatus formats the lines of /proc/PID/status that paddock reads the
// way fs/proc/array.c does: Name escapes '\n' and '\\' (so a comm cannot
// forge a line), the rest are numbers.
func kernelStatus(name string, tgid, mode, filters int) []byte {
	esc := strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(name)
	return fmt.Appendf(nil, "Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t1\n"+
		"TracerPid:\t0\nUid:\t0\t0\t0\t0\nNoNewPrivs:\t1\nSeccomp:\t%d\nSeccomp_filters:\t%d\nSpeculation_Store_Bypass:\tthread vulnerable\n",
		esc, tgid, tgid+1, mode, filters)
}

// FuzzParseStatus: the Tgid and Seccomp lines of /proc/PID/status. Whatever
// the process named itself, a kernel-formatted file yields its own values;
// any bytes yield the first matching line's value or a bounded error, and a
// Tgid is never zero or negative.
func FuzzParseStatus(f *testing.F) {
	f.Add("bash", uint32(4301), uint8(2), uint8(1), []byte("Name:\tbash\nTgid:\t4301\nSeccomp:\t2\nSeccomp_filters:\t1\n"))
	f.Add("x\nTgid:\t1", uint32(77), uint8(0), uint8(0), []byte("Tgid:\t0\n"))
	f.Add(`a\nb`, uint32(1), uint8(1), uint8(255), []byte("Tgid:\t-5\nSeccomp:\tx\n"))
	f.Add("", uint32(1<<31), uint8(2), uint8(3), []byte("Name:\tTgid:\t9\nTgid: 99999999999999999999999\n"))
	f.Fuzz(func(t *testing.T, name string, tgid uint32, mode, filters uint8, raw []byte) {
		id := int(tgid%(1<<22)) + 1
		file := kernelStatus(name, id, int(mode), int(filters))
		if got, err := ParseTgid(file); err != nil || got != id {
			t.Fatalf("ParseTgid(%q) = %d, %v; want %d", file, got, err, id)
		}
		if m, n, err := ParseSeccomp(file); err != nil || m != int(mode) || n != int(filters) {
			t.Fatalf("ParseSeccomp(%q) = %d, %d, %v; want %d, %d", file, m, n, err, mode, filters)
		}

		ref := func(key string) (string, bool) {
			for _, l := range strings.Split(string(raw), "\n") {
				if v, ok := strings.CutPrefix(l, key); ok {
					return strings.TrimSpace(v), true
				}
			}
			return "", false
		}
		got, err := ParseTgid(raw)
		v, ok := ref("Tgid:")
		if err != nil {
			checkErr(t, err, "")
			if !strings.Contains(err.Error(), "Tgid") {
				t.Fatalf("error %q does not name the Tgid line", err)
			}
		} else if n, aerr := strconv.Atoi(v); !ok || aerr != nil || n != got || got <= 0 {
			t.Fatalf("ParseTgid(%q) = %d, want the first Tgid line's %q, positive", raw, got, v)
		}
		m, n, err := ParseSeccomp(raw)
		if err != nil {
			checkErr(t, err, "")
			if !strings.Contains(err.Error(), "Seccomp") {
				t.Fatalf("error %q does not name the Seccomp line", err)
			}
			return
		}
		v, ok = ref("Seccomp:")
		if want, aerr := strconv.Atoi(v); !ok || aerr != nil || want != m {
			t.Fatalf("ParseSeccomp(%q) mode = %d, want the first Seccomp line's %q", raw, m, v)
		}
		if v, ok := ref("Seccomp_filters:"); ok {
			if want, _ := strconv.Atoi(v); want != n {
				t.Fatalf("ParseSeccomp(%q) filters = %d, want %q", raw, n, v)
			}
		} else if n != 0 {
			t.Fatalf("ParseSeccomp(%q) filters = %d without a Seccomp_filters line", raw, n)
		}
	})
}

// FuzzParseFdinfoPid: the Pid: line of a pidfd's fdinfo names the target of
// pidfd_send_signal. A kernel-formatted pidfd fdinfo yields its pid (-1 once
// reaped, 0 outside the namespace); any bytes yield ErrNotPidfd exactly when
// no line starts with "Pid:", else that line's value or a bounded error.
func FuzzParseFdinfoPid(f *testing.F) {
	f.Add(int32(1234), []byte("pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1\nPid:\t1234\nNSpid:\t1234\n"))
	f.Add(int32(-1), []byte("pos:\t0\nflags:\t0100002\n"))
	f.Add(int32(0), []byte("iff:\ttun0\nPid:\t\n"))
	f.Add(int32(1<<22), []byte("Pid:\t-99999999999999999999999"))
	f.Add(int32(7), []byte(" Pid:\t7\nPid: 8 \n"))
	f.Fuzz(func(t *testing.T, pid int32, raw []byte) {
		file := fmt.Appendf(nil, "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t%d\nPid:\t%d\nNSpid:\t%d\n", pid&0xffff, pid, pid)
		if got, err := ParseFdinfoPid(file); err != nil || got != int(pid) {
			t.Fatalf("ParseFdinfoPid(%q) = %d, %v; want %d", file, got, err, pid)
		}

		got, err := ParseFdinfoPid(raw)
		var line string
		found := false
		for _, l := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(l, "Pid:"); ok {
				line, found = strings.TrimSpace(v), true
				break
			}
		}
		if errors.Is(err, ErrNotPidfd) != !found {
			t.Fatalf("ParseFdinfoPid(%q): err %v, but a Pid: line found = %v", raw, err, found)
		}
		if err != nil {
			if found {
				checkErr(t, err, "fdinfo Pid ")
			}
			return
		}
		if want, aerr := strconv.Atoi(line); aerr != nil || want != got {
			t.Fatalf("ParseFdinfoPid(%q) = %d, want the Pid line's %q", raw, got, line)
		}
	})
}

// FuzzParseCmdline: argv is the process's own bytes. The split must give
// back exactly those bytes (less trailing NULs), no string may hold a NUL,
// and splitting what it returns, re-joined, must give the same argv.
func FuzzParseCmdline(f *testing.F) {
	f.Add([]byte("sleep\x0030\x00"))
	f.Add([]byte("\x00\x00\x00"))
	f.Add([]byte("setproctitle without nul"))
	f.Add([]byte("\x00a\x00\x00b\x00\x00"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		argv := ParseCmdline(raw)
		trimmed := bytes.TrimRight(raw, "\x00")
		if (argv == nil) != (len(trimmed) == 0) {
			t.Fatalf("ParseCmdline(%q) = %q: nil exactly when nothing but NULs", raw, argv)
		}
		if j := strings.Join(argv, "\x00"); j != string(trimmed) {
			t.Fatalf("ParseCmdline(%q) = %q, which joins to %q", raw, argv, j)
		}
		for i, a := range argv {
			if strings.IndexByte(a, 0) >= 0 {
				t.Fatalf("argv[%d] = %q holds a NUL", i, a)
			}
		}
		var again []byte
		for _, a := range argv {
			again = append(append(again, a...), 0)
		}
		if back := ParseCmdline(again); strings.Join(back, "\x00") != strings.Join(argv, "\x00") || len(back) != len(argv) {
			t.Fatalf("ParseCmdline of %q re-encoded = %q, want %q", raw, back, argv)
		}
	})
}
