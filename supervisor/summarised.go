package supervisor

import (
	"github.com/paddock-dev/paddock/report"
)

// summarisedOps is the control socket's view of the session (controlOps)
// with each adoption also counted in the session's summary, which
// --strict, --report and the closing line read: an adoption widens what
// the agent may signal on its own say-so, and a CI job that adopts a
// process and kills it must not pass as "no refusals".
type summarisedOps struct{ controlOps }

// Adopt implements control.Ops.
func (o summarisedOps) Adopt(pid int, reason string, lifelineOK bool, by string, inside bool) (LeaseInfo, error) {
	l, err := o.controlOps.Adopt(pid, reason, lifelineOK, by, inside)
	if err == nil {
		o.s.summariseAdoption(l)
	}
	return l, err
}

// summariseAdoption counts adoption l in the session's summary.
func (s *Session) summariseAdoption(l LeaseInfo) {
	s.pipeline.Adopted(report.Adoption{When: l.AdoptedAt, Pid: l.Pid, Comm: l.Comm, Reason: l.Reason, By: l.AdoptedBy, LifelineOverride: l.LifelineOverride})
}
