package supervisor_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/paddock-dev/paddock/journal"
	"github.com/paddock-dev/paddock/supervisor"
)

// Start a command under supervision, signal it through the session handle,
// and collect its exit status (128+N for a death by signal N). The program
// using this package must serve supervisor.InitChild first thing in main (reexec.Run).
func ExampleStart() {
	path, _ := exec.LookPath("sleep")
	s, err := supervisor.Start(supervisor.Config{Path: path, Args: []string{"sleep", "30"}, Log: zerolog.Nop(), Stdout: devNull()})
	if err != nil {
		fmt.Println(err)
		return
	}
	sd, err := s.KillProcess(s.Pid(), syscall.SIGTERM)
	fmt.Println("group:", sd.Group, err)
	fmt.Println("exit", s.Wait())
	// Output:
	// group: false <nil>
	// exit 143
}

// Adopt a process the agent did not start, so that it (and the agent) may
// signal it; the adoption is journaled with its reason.
func ExampleSession_Adopt() {
	dir, _ := os.MkdirTemp("", "paddock-example-")
	defer os.RemoveAll(dir)
	j, _ := journal.Open(filepath.Join(dir, "journal.jsonl"), journal.Options{})
	defer j.Close()

	outside := exec.Command("sleep", "30")
	_ = outside.Start()
	defer func() { _ = outside.Process.Kill(); _ = outside.Wait() }()

	path, _ := exec.LookPath("sleep")
	s, err := supervisor.Start(supervisor.Config{Path: path, Args: []string{"sleep", "30"}, Journal: j, Log: zerolog.Nop(), Stdout: devNull()})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = s.KillProcess(outside.Process.Pid, syscall.SIGTERM)
	fmt.Println("before adoption, refused:", err != nil)
	l, err := s.Adopt(outside.Process.Pid, "test subject started outside the agent", false)
	fmt.Println(l.Comm, l.Reason, err)
	_, err = s.KillProcess(outside.Process.Pid, syscall.SIGTERM)
	fmt.Println("after adoption:", err)
	_ = s.Kill()
	fmt.Println("exit", s.Wait())
	// Output:
	// before adoption, refused: true
	// sleep test subject started outside the agent <nil>
	// after adoption: <nil>
	// exit 137
}

// List what the session owns.
func ExampleSession_Owned() {
	sh, _ := exec.LookPath("sh")
	s, err := supervisor.Start(supervisor.Config{Path: sh, Args: []string{"sh", "-c", "sleep 30 & sleep 31; :"}, Log: zerolog.Nop(), Stdout: devNull(), Stderr: devNull()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Wait()
	defer s.Kill()
	var ps []supervisor.Process
	settled := func() bool {
		n := 0
		for _, p := range ps {
			if p.Comm == "sleep" {
				n++
			}
		}
		return n == 2
	}
	for i := 0; i < 200 && !settled(); i++ {
		time.Sleep(10 * time.Millisecond)
		ps, _ = s.Owned()
	}
	for _, p := range ps {
		fmt.Println(p.Comm, p.OwnedBy, p.Agent)
	}
	// Unordered output:
	// sh tree true
	// sleep tree false
	// sleep tree false
}

// devNull keeps the agents of these examples off the example's captured stdout.
func devNull() *os.File {
	f, _ := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	return f
}
