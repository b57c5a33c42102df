// Package features probes what this kernel and this process give paddock:
// the seccomp actions, user notification and its flags, whether a listener
// can be installed here at all, pidfds, the child subreaper, Landlock,
// cgroup v2, IA32 emulation, ptrace, and the seccomp state of this process;
// and from those, which backend `paddock run --backend auto` picks and why.
// `paddock doctor` prints its Report; docs/doctor.md explains each item.
//
// Whether a listener can be installed is only known by installing one, and a
// seccomp filter cannot be removed: a throwaway child (this binary executed
// again with ProbeArg, see ProbeChild) installs it and reports back.
// Everything else is read from /proc and /sys or tried with a harmless call
// (signal 0 to itself, a descriptor it already holds).
//
// The package's files by job: probe.go gathers the facts (Probe), with
// probechild.go (the listener probe child), kconfig.go (the kernel
// config's IA32 emulation) and bpflsm.go; version.go knows which kernel
// brought what; backend.go is the backend choice of --backend auto;
// items.go turns the facts into the Report's items and the notes that
// `paddock doctor` prints; report.go is the Report and what callers ask
// of it (Need).
package features
