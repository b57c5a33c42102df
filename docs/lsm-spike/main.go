// Command spike loads spike.bpf.o, makes the thread it forks from a
// session's seed, runs a shell command from that thread (a member of the
// session) beside a foreign process started before, and answers each
// refusal the programs report by writing a message into the caller's
// stderr through pidfd_getfd and posting the acknowledgement that lets the
// caller's call end with EPERM. See README.md.
//
// Environment: SCRIPT, the shell command (FOREIGN stands for the foreign
// pid); REPEAT, how many times to run it (counting the runs whose stderr
// had the message); ACK_DELAY, a delay before each acknowledgement.
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// member is struct member of spike.bpf.c.
type member struct {
	Session uint64
	Flags   uint32
	State   uint32
	Since   uint64
	Seq     uint32
	Pad     uint32
}

// event is struct event of spike.bpf.c.
type event struct {
	CallerTid, CallerTgid, TargetTid, TargetTgid uint32
	Sig                                          int32
	Seq                                          uint32
	Nr                                           int64
}

const (
	flagSeed    = 8
	pidfdThread = unix.O_EXCL // PIDFD_THREAD
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "spike:", err)
		os.Exit(1)
	}
}

func run() error {
	t0 := time.Now()
	coll, err := ebpf.LoadCollection("spike.bpf.o")
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer coll.Close()
	t1 := time.Now()
	var links []link.Link
	for _, name := range []string{"task_alloc", "task_kill"} {
		l, err := link.AttachLSM(link.LSMOptions{Program: coll.Programs[name]})
		if err != nil {
			return fmt.Errorf("attach %s: %w", name, err)
		}
		defer l.Close() // and so kept alive: a collected link detaches
		links = append(links, l)
	}
	fmt.Printf("load %v, attach %v\n", t1.Sub(t0), time.Since(t1))

	foreign := exec.Command("sleep", "1000")
	if err := foreign.Start(); err != nil {
		return err
	}
	defer foreign.Process.Kill()
	go answer(coll)

	script := os.Getenv("SCRIPT")
	if script == "" {
		script = "kill -9 FOREIGN; echo rc=$? >&2; sleep 1 & kill -TERM $!; echo own=$? >&2"
	}
	script = strings.ReplaceAll(script, "FOREIGN", strconv.Itoa(foreign.Process.Pid))
	n := 1
	if s := os.Getenv("REPEAT"); s != "" {
		if n, err = strconv.Atoi(s); err != nil {
			return fmt.Errorf("REPEAT: %w", err)
		}
	}
	res := make(chan error, 1)
	go func() {
		// The seed is this thread: everything it forks is a member.
		runtime.LockOSThread()
		pfd, err := unix.PidfdOpen(unix.Gettid(), pidfdThread)
		if err != nil {
			res <- fmt.Errorf("pidfd_open(thread): %w", err)
			return
		}
		if err := coll.Maps["members"].Put(uint32(pfd), member{Session: 1, Flags: flagSeed}); err != nil {
			res <- fmt.Errorf("seed: %w", err)
			return
		}
		got := 0
		for i := 0; i < n; i++ {
			start := time.Now()
			out, err := runChild(script)
			if err != nil {
				res <- err
				return
			}
			if n == 1 {
				fmt.Printf("child took %v, stderr:\n%s", time.Since(start), out)
			}
			if strings.Contains(out, "paddock refused") {
				got++
			}
		}
		if n > 1 {
			fmt.Printf("%d of %d children had the message in their stderr pipe\n", got, n)
		}
		res <- nil
	}()
	err = <-res
	if foreign.Process.Signal(syscall.Signal(0)) == nil {
		fmt.Println("foreign alive")
	}
	return err
}

// runChild runs sh -c script from the calling thread with its stderr on a
// pipe, and returns what came through the pipe.
func runChild(script string) (string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", err
	}
	defer r.Close()
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", script}, &syscall.ProcAttr{Files: []uintptr{0, 1, w.Fd()}})
	w.Close()
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	buf.ReadFrom(r)
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, 0, nil)
	return buf.String(), nil
}

// answer reads the refusals, writes each one's message into the caller's
// stderr and acknowledges it.
func answer(coll *ebpf.Collection) {
	rd, err := ringbuf.NewReader(coll.Maps["events"])
	if err != nil {
		fmt.Fprintln(os.Stderr, "spike: ring buffer:", err)
		return
	}
	var delay time.Duration
	if s := os.Getenv("ACK_DELAY"); s != "" {
		delay, _ = time.ParseDuration(s)
	}
	for {
		rec, err := rd.Read()
		if err != nil {
			return
		}
		var e event
		if err := binary.Read(bytes.NewReader(rec.RawSample), binary.NativeEndian, &e); err != nil {
			continue
		}
		pfd, err := unix.PidfdOpen(int(e.CallerTid), pidfdThread)
		if err != nil {
			continue // the caller is gone
		}
		if fd, err := unix.PidfdGetfd(pfd, 2, 0); err == nil {
			msg := fmt.Sprintf("paddock refused kill(%d) of %d from %d\n", e.Sig, e.TargetTgid, e.CallerTgid)
			unix.Write(fd, []byte(msg))
			unix.Close(fd)
		}
		time.Sleep(delay)
		if err := coll.Maps["acked"].Put(uint32(pfd), e.Seq); err != nil {
			fmt.Fprintln(os.Stderr, "spike: ack:", err)
		}
		unix.Close(pfd)
	}
}
