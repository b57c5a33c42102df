//go:build !amd64

package main

import "errors"

func int80Kill(pid, sig int) error { return errors.New("int 0x80 exists only on amd64") }
