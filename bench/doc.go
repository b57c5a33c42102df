// Package bench holds paddock's benchmarks; it has no code of its own.
//
// decide_test.go measures the pure decision core (policy.Decide against a
// fake World) and one live ownership classification through /proc:
//
//	go test -run '^$' -bench . -benchmem ./bench/
//
// killloop.c, forkexec.sh and run.sh measure the whole supervisor from the
// outside (signal round trips, exec-heavy workloads, startup), bare and under
// paddock run, and write bench/out/results.md:
//
//	bench/run.sh
//
// docs/perf.md records the numbers and what they mean. Nothing here runs
// during a plain go test ./...: benchmarks run only with -bench.
package bench
