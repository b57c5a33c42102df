package guard

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestSlowCases(t *testing.T) {
	for _, s := range []string{
		"for a in 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0; do for b in 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0; do for c in 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0; do x=1; done; done; done",
		"for a in {1..64}; do for b in {1..64}; do for c in {1..64}; do x=1; done; done; done",
		"for a in {1..64}; do for b in {1..64}; do for c in {1..64}; do : {1..64}{1..64}{1..64}; done; done; done",
		strings.Repeat("eval ", 15) + strings.Repeat("{a,b}", 20),
		strings.Repeat("$(", 1000) + strings.Repeat(")", 1000),
		strings.Repeat("{", 5000) + strings.Repeat("}", 5000),
		strings.Repeat("a{b,c}", 3000),
		"echo " + strings.Repeat("{1..9}", 300),
		"f() { " + strings.Repeat("(", 3000) + "reboot" + strings.Repeat(")", 3000) + "; }",
		strings.Repeat("a=$a$a;", 200),
		"a=x; " + strings.Repeat("a=$a$a; ", 40) + "echo $a",
	} {
		t0 := time.Now()
		v, err := CheckShell(s, nil, Policy{})
		fmt.Printf("%v %d %v %v\n", time.Since(t0), len(s), v.Allow, err)
	}
}
