//go:build paddock_forceallow

package supervisor

// forceAllow is on in this build (tag paddock_forceallow): every refusal is
// turned into an allow, for the kernel-wall tests only (forceallow.go).
const forceAllow = true
