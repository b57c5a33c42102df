package llaudit

// RefusedConnect is refusedConnect, for the external tests.
var RefusedConnect = refusedConnect
