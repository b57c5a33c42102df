package supervisor

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/control"
	"github.com/paddock-dev/paddock/journal"
)

// TestAdoptLiveOnlyOnceDurable (issue 34): while an adoption's record waits
// for the journal's lock (which any process of the user can hold), the
// process is as foreign as before: every kill of it is refused. Past the
// lock's wait the adoption is refused, unless the journal's mirror took the
// record: then, and only then, the lease is live.
func TestAdoptLiveOnlyOnceDurable(t *testing.T) {
	for _, mirrored := range []bool{false, true} {
		name := "no mirror"
		if mirrored {
			name = "mirror"
		}
		t.Run(name, func(t *testing.T) {
			outside := exec.Command("sleep", "600")
			if err := outside.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = outside.Process.Kill(); _ = outside.Wait() }()
			path := filepath.Join(t.TempDir(), "j.jsonl")
			o := journal.Options{LockWait: time.Second}
			var mirror *net.UnixConn
			if mirrored {
				sock := filepath.Join(t.TempDir(), "journald.sock")
				c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				mirror, o.Mirror, o.MirrorSocket = c, journal.MirrorJournald, sock
			}
			j, err := journal.Open(path, o)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			s := startSession(t, time.Minute, Config{Journal: j})

			// The refused kills' records go to the mirror too (the file
			// cannot take them either): the mirror is read as it goes, so
			// that it never fills, and the adoption's entry is kept.
			// A kill that goes through sends a marker to the mirror: the
			// mirror's queue is in order, so the adoption's record must
			// come before it.
			adopted := make(chan string, 1)
			markedAfter := make(chan bool, 1)
			const marker = "MARKER=the kill went through"
			if mirror != nil {
				go func() {
					buf := make([]byte, 1<<16)
					seen := false
					for {
						n, _, err := mirror.ReadFromUnix(buf)
						if err != nil {
							return
						}
						switch e := string(buf[:n]); {
						case strings.Contains(e, "PADDOCK_ACTION=adopted"):
							seen = true
							adopted <- e
						case e == marker:
							markedAfter <- seen
						}
					}
				}()
			}
			held, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			if err := unix.Flock(int(held.Fd()), unix.LOCK_EX); err != nil {
				t.Fatal(err)
			}
			pid := outside.Process.Pid
			done := make(chan control.Response, 1)
			go func() {
				resp, err := control.Call(s.SocketPath(), control.Request{Op: control.OpAdopt, Pid: pid, Reason: "test subject"})
				if err != nil {
					resp.Error = err.Error()
				}
				done <- resp
			}()
			kill := func() control.Response {
				resp, err := control.Call(s.SocketPath(), control.Request{Op: control.OpKill, Pid: pid, Signal: int(unix.SIGCONT)})
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}
			var adopt control.Response
			kills := 0
		wait:
			for {
				select {
				case adopt = <-done:
					break wait
				default:
				}
				if r := kill(); r.OK {
					if mirror == nil {
						t.Fatalf("kill %d of pid %d went through, and its adoption cannot be durable anywhere", kills, pid)
					}
					if _, err := mirror.WriteToUnix([]byte(marker), &net.UnixAddr{Name: o.MirrorSocket, Net: "unixgram"}); err != nil {
						t.Fatal(err)
					}
					if !<-markedAfter {
						t.Fatalf("kill %d of pid %d went through before its adoption's record reached the mirror", kills, pid)
					}
					adopt = <-done
					break
				}
				kills++
			}
			held.Close()
			if kills == 0 {
				t.Fatal("no kill was tried while the adoption waited")
			}
			if !mirrored {
				if adopt.OK || !strings.Contains(adopt.Error, "adoption of pid") || !strings.Contains(adopt.Error, "held by pid") {
					t.Fatalf("adoption with the journal's lock held and no mirror: %+v; want it refused, naming the lock's holder", adopt)
				}
				if r := kill(); r.OK {
					t.Fatal("a refused adoption left a live lease")
				}
				return
			}
			if !adopt.OK {
				t.Fatalf("adoption whose record the mirror took: %+v; want it granted", adopt)
			}
			select {
			case e := <-adopted:
				if !strings.Contains(e, "PADDOCK_JOURNAL_ERROR=") {
					t.Fatalf("mirrored adoption %q does not say the file could not take it", e)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the mirror got no adoption record")
			}
			if r := kill(); !r.OK {
				t.Fatalf("kill of the adopted pid %d after its adoption: %+v", pid, r)
			}
		})
	}
}
