package supervisor_test

import (
	"os"
	"testing"

	"github.com/paddock-dev/paddock/supervisor"
)

// TestMain lets this test binary serve as the re-executed init of the
// sessions the examples start.
func TestMain(m *testing.M) {
	supervisor.MaybeRunInit()
	os.Exit(m.Run())
}
