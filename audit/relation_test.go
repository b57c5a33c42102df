package audit

import "testing"

func TestRelationStringAndLifeline(t *testing.T) {
	tests := []struct {
		rel      Relation
		str      string
		lifeline bool
	}{
		{RelGone, "gone", false},
		{RelForeign, "foreign", false},
		{RelOwned, "owned", false},
		{RelAgentRoot, "agent root", false},
		{RelSupervisor, "paddock supervisor", true},
		{RelSupervisorAncestor, "ancestor of the paddock supervisor", true},
		{RelInit, "PID 1", true},
		{Relation(42), "relation(42)", false},
	}
	for _, tc := range tests {
		if got := tc.rel.String(); got != tc.str {
			t.Errorf("Relation(%d).String() = %q, want %q", int(tc.rel), got, tc.str)
		}
		if got := tc.rel.Lifeline(); got != tc.lifeline {
			t.Errorf("%v.Lifeline() = %v, want %v", tc.rel, got, tc.lifeline)
		}
	}
}
