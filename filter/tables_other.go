//go:build !amd64 && !arm64

package filter

// No tables for this GOARCH: Build fails with an error and Lookup knows no
// arch, rather than guessing numbers.
var host = archSpec{}
