package guard

import (
	"fmt"
	"os"
	"time"
)

func watchdog(s string) func() {
	tm := time.AfterFunc(3*time.Second, func() {
		fmt.Fprintf(os.Stderr, "SLOW INPUT %q\n", s)
		os.WriteFile("/tmp/slow_input.txt", []byte(s), 0o644)
		panic("slow input")
	})
	return func() { tm.Stop() }
}
