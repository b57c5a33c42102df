package audit

import "fmt"

// Relation is how a process relates to the supervised session.
type Relation int

// Relations, from the point of view of the supervised agent.
const (
	// RelGone: no such process (it exited, or never existed).
	RelGone Relation = iota
	// RelForeign: not the agent and not started by it.
	RelForeign
	// RelOwned: started by the agent (a descendant of the agent root).
	RelOwned
	// RelAgentRoot: the agent process paddock started. owned from its own point
	// of view, a lifeline when one of its descendants aims at it.
	RelAgentRoot
	// RelSupervisor: the paddock supervisor itself.
	RelSupervisor
	// RelSupervisorAncestor: a process the supervisor descends from (the user's
	// shell, terminal, session manager).
	RelSupervisorAncestor
	// RelInit: PID 1.
	RelInit
)

// String names the relation as it appears in messages and the journal.
func (r Relation) String() string {
	switch r {
	case RelGone:
		return "gone"
	case RelForeign:
		return "foreign"
	case RelOwned:
		return "owned"
	case RelAgentRoot:
		return "agent root"
	case RelSupervisor:
		return "paddock supervisor"
	case RelSupervisorAncestor:
		return "ancestor of the paddock supervisor"
	case RelInit:
		return "PID 1"
	}
	return fmt.Sprintf("relation(%d)", int(r))
}

// Lifeline reports whether the relation marks a process whose death takes the
// session down (never owned, whoever asks).
func (r Relation) Lifeline() bool {
	return r == RelSupervisor || r == RelSupervisorAncestor || r == RelInit
}
