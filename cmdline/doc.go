// Package cmdline reads command lines the way a shell and the programs on
// them would: a shell string through a real shell parser (mvdan.cc/sh),
// an argv through the wrappers that run another program (sudo, env, nohup,
// timeout, busybox, uv run, ld.so, ...), with the environment each command
// would get, down to the simple commands that finally run.
//
// It holds the one reader that the guard (package guard: may this command
// run?) and the VRAM preflight (package vram: what workload is this?) both
// use, so that a wrapper one of them sees through is seen through by the
// other: Reader (Script, Follow) for the guard's readings, Unwrap for an
// exec's innermost program, ScanOpts for a program's options.
//
// The package performs no I/O: every fact comes from its arguments. Its
// limits (nesting, length, commands, words) keep a hostile string cheap;
// past them the reading stops with an error.
package cmdline
