package filter

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestAssembler(t *testing.T) {
	t.Run("resolves labels", func(t *testing.T) {
		var a assembler
		a.loadAbs(offNr)
		a.jump(unix.BPF_JEQ, 1, "one", "")
		a.jump(unix.BPF_JEQ, 2, "", "other")
		a.goTo("one")
		a.label("other")
		a.ret(2)
		a.label("one")
		a.ret(1)
		prog, err := a.assemble()
		if err != nil {
			t.Fatal(err)
		}
		want := []unix.SockFilter{
			{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0},
			{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 1, Jt: 3, Jf: 0},
			{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 2, Jt: 0, Jf: 1},
			{Code: unix.BPF_JMP | unix.BPF_JA, K: 1},
			{Code: unix.BPF_RET | unix.BPF_K, K: 2},
			{Code: unix.BPF_RET | unix.BPF_K, K: 1},
		}
		if len(prog) != len(want) {
			t.Fatalf("got %d instructions, want %d", len(prog), len(want))
		}
		for i := range want {
			if prog[i] != want[i] {
				t.Errorf("insn %d: got %+v, want %+v", i, prog[i], want[i])
			}
		}
		for nr, ret := range map[int32]uint32{1: 1, 2: 1, 3: 2} {
			if r, err := interpret(prog, seccompData{Nr: nr}, false); err != nil || r.Ret != ret {
				t.Errorf("nr %d: ret %d err %v, want %d", nr, r.Ret, err, ret)
			}
		}
	})

	errCases := []struct {
		name string
		prog func(a *assembler)
		want string
	}{
		{"jump out of u8 range", func(a *assembler) {
			a.loadAbs(offNr)
			a.jump(unix.BPF_JEQ, 1, "far", "")
			for range 256 {
				a.ret(0)
			}
			a.label("far")
			a.ret(1)
		}, "more than the 255"},
		{"jump just in range", func(a *assembler) {
			a.loadAbs(offNr)
			a.jump(unix.BPF_JEQ, 1, "far", "")
			for range 255 {
				a.ret(0)
			}
			a.label("far")
			a.ret(1)
		}, ""},
		{"false branch out of range", func(a *assembler) {
			a.loadAbs(offNr)
			a.jump(unix.BPF_JEQ, 1, "", "far")
			for range 300 {
				a.ret(0)
			}
			a.label("far")
			a.ret(1)
		}, "more than the 255"},
		{"long ja is fine", func(a *assembler) {
			a.goTo("far")
			for range 1000 {
				a.ret(0)
			}
			a.label("far")
			a.ret(1)
		}, ""},
		{"backward jump", func(a *assembler) {
			a.label("top")
			a.loadAbs(offNr)
			a.jump(unix.BPF_JEQ, 1, "top", "")
			a.ret(0)
		}, "backward"},
		{"undefined label", func(a *assembler) {
			a.loadAbs(offNr)
			a.jump(unix.BPF_JEQ, 1, "nowhere", "")
			a.ret(0)
		}, "undefined label"},
		{"label past the end", func(a *assembler) {
			a.goTo("end")
			a.ret(0)
			a.label("end")
		}, "past the last"},
		{"duplicate label", func(a *assembler) {
			a.label("x")
			a.ret(0)
			a.label("x")
			a.ret(1)
		}, "defined twice"},
		{"no return at the end", func(a *assembler) {
			a.loadAbs(offNr)
		}, "does not end with a return"},
		{"empty", func(a *assembler) {}, "empty"},
		{"too long", func(a *assembler) {
			for range unix.BPF_MAXINSNS + 1 {
				a.ret(0)
			}
		}, "at most 4096"},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			var a assembler
			c.prog(&a)
			prog, err := a.assemble()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.want == "":
				if prog == nil {
					t.Fatal("no program")
				}
			case err == nil:
				t.Fatalf("no error, want one containing %q", c.want)
			case !strings.Contains(err.Error(), c.want):
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

// TestTree checks the binary search on its own for sizes around the
// linear/split threshold.
func TestTree(t *testing.T) {
	for n := 0; n <= 20; n++ {
		var es []entry
		for i := range n {
			es = append(es, entry{nr: uint32(10 + 3*i), target: "hit"})
		}
		var a assembler
		a.loadAbs(offNr)
		a.tree(es, "miss")
		a.label("hit")
		a.ret(1)
		a.label("miss")
		a.ret(0)
		prog, err := a.assemble()
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		for nr := int32(0); nr < 80; nr++ {
			want := uint32(0)
			if nr >= 10 && (nr-10)%3 == 0 && int(nr-10)/3 < n {
				want = 1
			}
			r, err := interpret(prog, seccompData{Nr: nr}, false)
			if err != nil || r.Ret != want {
				t.Errorf("n=%d nr=%d: ret %d err %v, want %d", n, nr, r.Ret, err, want)
			}
		}
	}
}
