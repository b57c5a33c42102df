package supervisor_test

import (
	"os"
	"testing"

	"github.com/paddock-dev/paddock/internal/features"
	"github.com/paddock-dev/paddock/internal/reexec"
	"github.com/paddock-dev/paddock/supervisor"
)

// TestMain lets this test binary serve as the re-executed init of the
// sessions the examples start, and as the agents' helpers.
func TestMain(m *testing.M) {
	reexec.Run(supervisor.InitChild(), features.ProbeChild(), supervisor.HoldConnsChild())
	os.Exit(m.Run())
}
