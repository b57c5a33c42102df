package btf

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
)

// blob builds a little-endian BTF blob from types, each a struct btf_type
// (name offset, kind, vlen) followed by extra bytes, and the string
// section strs.
type typ struct {
	name  uint32
	kind  int
	vlen  int
	extra int
}

func blob(types []typ, strs string) []byte {
	le := binary.LittleEndian
	var ts []byte
	for _, t := range types {
		b := make([]byte, typeLen+t.extra)
		le.PutUint32(b, t.name)
		le.PutUint32(b[4:], uint32(t.kind)<<24|uint32(t.vlen))
		ts = append(ts, b...)
	}
	h := make([]byte, hdrSize)
	le.PutUint16(h, magic)
	h[2] = 1
	le.PutUint32(h[4:], hdrSize)
	le.PutUint32(h[8:], 0)
	le.PutUint32(h[12:], uint32(len(ts)))
	le.PutUint32(h[16:], uint32(len(ts)))
	le.PutUint32(h[20:], uint32(len(strs)))
	return append(append(h, ts...), strs...)
}

func TestFindFunc(t *testing.T) {
	// Strings: "" at 0, "int" at 1, "s" at 5, "f" at 7, "g" at 9.
	const strs = "\x00int\x00s\x00f\x00g\x00"
	// One type of every kind, each with the bytes that follow it, so that a
	// wrong length for any kind puts the walk out of step before "g".
	types := []typ{
		{1, kindInt, 0, 4},
		{0, kindPtr, 0, 0},
		{0, kindArray, 0, 12},
		{5, kindStruct, 2, 24},
		{0, kindUnion, 1, 12},
		{0, kindEnum, 3, 24},
		{0, kindFwd, 0, 0},
		{0, kindTypedef, 0, 0},
		{0, kindVolatile, 0, 0},
		{0, kindConst, 0, 0},
		{0, kindRestrict, 0, 0},
		{7, kindFunc, 0, 0}, // id 12
		{0, kindFuncProto, 2, 16},
		{0, kindVar, 0, 4},
		{0, kindDatasec, 2, 24},
		{0, kindFloat, 0, 0},
		{0, kindDeclTag, 0, 4},
		{0, kindTypeTag, 0, 0},
		{0, kindEnum64, 2, 24},
		{9, kindFunc, 0, 0}, // id 20
	}
	raw := blob(types, strs)
	for _, tc := range []struct {
		name string
		want uint32
		err  error
	}{
		{"f", 12, nil},
		{"g", 20, nil},
		{"s", 0, ErrNotFound},   // a struct, not a function
		{"int", 0, ErrNotFound}, // an int
		{"h", 0, ErrNotFound},
	} {
		got, err := FindFunc(raw, tc.name)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("FindFunc(%q) = %d, %v; want %d, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestFindFuncBadInput(t *testing.T) {
	good := blob([]typ{{1, kindFunc, 0, 0}}, "\x00f\x00")
	cut := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(cut[12:], 100) // type section longer than the blob
	unknown := blob([]typ{{0, 31, 0, 0}, {1, kindFunc, 0, 0}}, "\x00f\x00")
	short := blob([]typ{{0, kindInt, 0, 0}}, "\x00f\x00") // an int without its 4 bytes
	for name, raw := range map[string][]byte{
		"empty":        nil,
		"no magic":     make([]byte, 64),
		"past the end": cut,
		"unknown kind": unknown,
		"cut short":    short,
	} {
		if _, err := FindFunc(raw, "f"); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("%s: err = %v, want a format error", name, err)
		}
	}
}

// TestKernelBTF walks the running kernel's whole BTF: a name it does not
// hold must come back ErrNotFound, which the walk only reaches by stepping
// over every type of every kind this kernel uses, and a function it
// certainly holds must be found.
func TestKernelBTF(t *testing.T) {
	raw, err := os.ReadFile(VmlinuxPath)
	if err != nil {
		t.Skipf("needs kernel BTF (CONFIG_DEBUG_INFO_BTF): %v", err)
	}
	if _, err := FindFunc(raw, "no such function, paddock"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("walking %s: %v", VmlinuxPath, err)
	}
	id, err := FuncID("do_exit")
	if err != nil || id == 0 {
		t.Fatalf("FuncID(do_exit) = %d, %v", id, err)
	}
}
