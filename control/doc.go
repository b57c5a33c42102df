// Package control is the session's control socket: the protocol spoken on
// it, the server a supervisor runs, and the client `paddock adopt`,
// `release`, `ps` and `kill` use.
//
// The socket is a unix socket in a fresh 0700 directory, checked before and
// after the socket is bound in it (dir.go); a client sends one JSON Request
// on one line and gets one JSON Response back, and only the session's user
// and root are served (SO_PEERCRED), within budgets that keep the session's
// processes from using up the user's connections (budget.go). The package knows
// nothing of sessions: the server carries requests out through Ops, which
// the supervisor implements, so that the protocol and its bounds can be
// tested, and fuzzed, against a stand-in.
package control
