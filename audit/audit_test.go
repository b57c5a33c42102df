package audit

import (
	"regexp"
	"testing"
)

func TestActions(t *testing.T) {
	word := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	seen := map[Action]bool{}
	for _, a := range Actions() {
		if !word.MatchString(string(a)) || seen[a] || !a.Known() {
			t.Errorf("action %q: want a unique, known snake_case word", a)
		}
		seen[a] = true
	}
	if Action("deny").Known() || Action("").Known() {
		t.Error("an unlisted action counts as known")
	}
	a := Actions()
	a[0] = "changed"
	if Actions()[0] != Adopted {
		t.Error("Actions shares its backing array with callers")
	}
}
