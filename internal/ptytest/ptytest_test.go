package ptytest

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestOpen(t *testing.T) {
	master, slave := Open(t)
	for name, f := range map[string]int{"master": int(master.Fd()), "slave": int(slave.Fd())} {
		if _, err := unix.IoctlGetTermios(f, unix.TCGETS); err != nil {
			t.Errorf("the %s is not a terminal: %v", name, err)
		}
	}
	if _, err := slave.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := master.Read(b); err != nil || b[0] != 'x' {
		t.Fatalf("the master read %q, %v; want what the slave wrote", b, err)
	}
}
