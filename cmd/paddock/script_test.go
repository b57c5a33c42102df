package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/paddock-dev/paddock/supervisor"
)

func TestMain(m *testing.M) {
	supervisor.MaybeRunInit()
	os.Exit(testscript.RunMain(m, map[string]func() int{"paddock": func() int { return execute(os.Args[1:]) }}))
}

func TestScripts(t *testing.T) { testscript.Run(t, testscript.Params{Dir: "testdata"}) }
