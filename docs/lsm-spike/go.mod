module github.com/paddock-dev/paddock/docs/lsm-spike

go 1.26.8

require (
	github.com/cilium/ebpf v0.22.0
	golang.org/x/sys v0.50.0
)
