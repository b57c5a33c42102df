//go:build !paddock_forceallow

package supervisor

// forceAllow turns every refusal into an allow. Only a binary built with
// the paddock_forceallow tag has it on (forceallow_on.go): the end-to-end
// tests build one to show what the kernel's wall holds by itself when the
// supervisor lets everything through. A release build cannot turn it on.
const forceAllow = false
