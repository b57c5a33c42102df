package dbusproxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/dbustest"
	"github.com/paddock-dev/paddock/internal/dbuswire"
	"github.com/paddock-dev/paddock/internal/sockettest"
)

// wait bounds every wait of these tests on an event, so that a failure
// fails rather than hangs; nothing waits for time to pass.
const wait = 20 * time.Second

func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("no %s in %v", what, wait)
	}
	var zero T
	return zero
}

// startBus starts a dbus-daemon of the test's own and returns the path of
// its socket.
func startBus(t *testing.T) string {
	t.Helper()
	return dbustest.StartBus(t, dbustest.BusOptions{}).Path
}

// socketpair is the pair paddock puts in place of the agent's socket.
func socketpair(t testing.TB) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

// peer is the agent's client in these tests: a dbustest connection whose
// failures fail the test.
type peer struct {
	t    testing.TB
	conn *dbustest.Conn
	c    *net.UnixConn // its socket
	name string        // its unique name, once the bus said it
}

// connect authenticates on c (EXTERNAL, with unix fds) and, for a bus,
// says Hello.
func connect(t testing.TB, c *net.UnixConn, hello bool) *peer {
	t.Helper()
	conn, err := dbustest.New(c)
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{t: t, conn: conn, c: c}
	if hello {
		if p.name, err = conn.Hello(); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// read returns the next message, with its fds.
func (p *peer) read() (*dbustest.Message, error) {
	return p.conn.Read()
}

// send sends a call with flags and fds and returns its serial.
func (p *peer) send(flags byte, fds []int, dest, path, iface, member, sig string, args ...any) uint32 {
	p.t.Helper()
	m := dbustest.MethodCall(dest, path, iface, member, sig, args...)
	m.Flags, m.FDs = flags, fds
	serial, err := p.conn.Send(m)
	if err != nil {
		p.t.Fatal(err)
	}
	return serial
}

// call makes a method call and waits for its reply, passing over the
// signals that come first.
func (p *peer) call(dest, path, iface, member, sig string, args ...any) *dbustest.Message {
	p.t.Helper()
	return p.callFDs(nil, dest, path, iface, member, sig, args...)
}

func (p *peer) callFDs(fds []int, dest, path, iface, member, sig string, args ...any) *dbustest.Message {
	p.t.Helper()
	return p.reply(p.send(0, fds, dest, path, iface, member, sig, args...))
}

// reply reads until the reply to serial; any other reply or call first
// is a failure.
func (p *peer) reply(serial uint32) *dbustest.Message {
	p.t.Helper()
	m, err := p.conn.Reply(serial)
	if err != nil {
		p.t.Fatal(err)
	}
	return m
}

// denied checks that a reply is paddock's AccessDenied and returns its
// message.
func denied(t testing.TB, m *dbustest.Message, p *peer, want string) string {
	t.Helper()
	if m.Type != dbuswire.TypeError || m.ErrorName != errAccessDenied {
		t.Fatalf("reply %+v, want an %s error", m, errAccessDenied)
	}
	text, _ := m.Body[0].(string)
	if m.Signature != "s" || !strings.HasPrefix(text, "paddock refused "+want) || !strings.Contains(text, "Way out: ") {
		t.Errorf("error message %q (signature %q), want paddock's refusal of %s", text, m.Signature, want)
	}
	if p.name != "" && m.Destination != p.name {
		t.Errorf("error to %q, want the client's unique name %q", m.Destination, p.name)
	}
	return text
}

// record is a call a stand-in service received.
type record struct {
	iface, member, path, arg string
}

// standIn serves name on the bus at busPath: it records each call and
// answers as the real service would, enough for the tests. It returns
// when it owns the name.
func standIn(t *testing.T, busPath, name string) <-chan record {
	t.Helper()
	calls := make(chan record, 64)
	dbustest.StandIn(t, busPath, name, func(m *dbustest.Message) *dbustest.Message {
		rec := record{iface: m.Interface, member: m.Member, path: m.Path}
		if strings.HasPrefix(m.Signature, "s") {
			rec.arg, _ = m.Body[0].(string)
		}
		if m.Member == "Notify" && len(m.Body) > 3 {
			rec.arg, _ = m.Body[3].(string)
		}
		reply := standInAnswer(m)
		calls <- rec
		return reply
	})
	return calls
}

// standInAnswer is the stand-in's reply to a call.
func standInAnswer(m *dbustest.Message) *dbustest.Message {
	switch m.Member {
	case "Notify":
		return dbustest.Return("u", 42)
	case "GetCapabilities":
		return dbustest.Return("as", []any{"body"})
	case "StartTransientUnit":
		if len(m.Body) > 0 && m.Body[0] == "exists.service" {
			return dbustest.ErrorReply("org.freedesktop.systemd1.UnitExists", "Unit exists.service was already loaded or has a fragment file.")
		}
		return dbustest.Return("o", "/org/freedesktop/systemd1/job/1")
	case "StopUnit", "StartUnit", "Stop":
		return dbustest.Return("o", "/org/freedesktop/systemd1/job/2")
	case "ReadFD":
		var got []byte
		if len(m.FDs) == 1 {
			got, _ = io.ReadAll(os.NewFile(uintptr(dup(m.FDs[0])), "passed"))
		}
		return dbustest.Return("s", string(got))
	case "OpenFD":
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return dbustest.ErrorReply("org.freedesktop.DBus.Error.Failed", err.Error())
		}
		unix.Write(p[1], []byte("from the service"))
		unix.Close(p[1])
		r := dbustest.Return("h", 0)
		r.FDs = []int{p[0]}
		return r
	}
	return dbustest.Return("")
}

func dup(fd int) int {
	n, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return n
}

// relayed starts a relay for one client connection and returns the
// client, its refusals and Relay's result.
func relayed(t *testing.T, busPath string, p Policy) (*peer, <-chan Refusal, <-chan error) {
	t.Helper()
	agent, client := socketpair(t)
	bus := sockettest.Dial(t, busPath)
	refusals := make(chan Refusal, 16)
	done := make(chan error, 1)
	go func() { done <- Relay(client, bus, "system", p, func(r Refusal) { refusals <- r }) }()
	return connect(t, agent, true), refusals, done
}

// TestRelay drives a relay between a Go client and a real dbus-daemon
// with stand-in login1, systemd1 and Notifications services.
func TestRelay(t *testing.T) {
	bus := startBus(t)
	login := standIn(t, bus, login1)
	sd := standIn(t, bus, systemd)
	notes := standIn(t, bus, "org.freedesktop.Notifications")

	t.Run("PowerOff refused", func(t *testing.T) {
		c, refusals, done := relayed(t, bus, Policy{})
		m := c.call(login1, "/org/freedesktop/login1", l1Mgr, "PowerOff", "b", false)
		text := denied(t, m, c, l1Mgr+".PowerOff on the system bus: ")
		r := recv(t, refusals, "refusal")
		if r.Rule != RulePowerControl || r.Message != text || r.Member != "PowerOff" || r.Destination != login1 {
			t.Errorf("refusal %+v, want power_control with the message the client got", r)
		}
		if m.Sender != login1 {
			t.Errorf("the error's sender %q, want %s, the name called", m.Sender, login1)
		}
		// The stand-in never saw it: the next call it gets is this one.
		if m = c.call(login1, "/org/freedesktop/login1", l1Mgr, "CanPowerOff", ""); m.Type != dbuswire.TypeMethodReturn {
			t.Fatalf("CanPowerOff: %+v", m)
		}
		if got := recv(t, login, "login1 call"); got.member != "CanPowerOff" {
			t.Errorf("login1 got %+v first, want CanPowerOff (PowerOff never)", got)
		}
		// No reply wanted, none sent: the next message is the next
		// call's reply.
		c.send(dbuswire.FlagNoReplyExpected, nil, login1, "/org/freedesktop/login1", l1Mgr, "Reboot", "b", false)
		if r := recv(t, refusals, "refusal"); r.Member != "Reboot" {
			t.Errorf("refusal %+v, want Reboot's", r)
		}
		if m = c.call(login1, "/org/freedesktop/login1", l1Mgr, "CanReboot", ""); m.Type != dbuswire.TypeMethodReturn {
			t.Errorf("after a refused call without a reply: %+v", m)
		}
		if got := recv(t, login, "login1 call"); got.member != "CanReboot" {
			t.Errorf("login1 got %+v, want CanReboot", got)
		}
		c.c.Close()
		if err := recv(t, done, "end of Relay"); err != nil {
			t.Errorf("Relay after the client closed: %v", err)
		}
	})

	t.Run("PowerOff with the opt-in", func(t *testing.T) {
		c, _, _ := relayed(t, bus, Policy{AllowPower: true})
		if m := c.call(login1, "/org/freedesktop/login1", l1Mgr, "PowerOff", "b", false); m.Type != dbuswire.TypeMethodReturn {
			t.Fatalf("PowerOff with AllowPower: %+v", m)
		}
		if got := recv(t, login, "login1 call"); got.member != "PowerOff" {
			t.Errorf("login1 got %+v, want PowerOff", got)
		}
	})

	t.Run("Notify passes", func(t *testing.T) {
		c, _, _ := relayed(t, bus, Policy{})
		m := c.call("org.freedesktop.Notifications", "/org/freedesktop/Notifications", "org.freedesktop.Notifications", "Notify",
			"susssasa{sv}i", "paddock", 0, "", "build done", "", []any{}, []any{}, 5000)
		if m.Type != dbuswire.TypeMethodReturn || m.Signature != "u" || m.Body[0] != uint32(42) {
			t.Fatalf("Notify: %+v, want the id 42", m)
		}
		if got := recv(t, notes, "Notify"); got.member != "Notify" || got.arg != "build done" {
			t.Errorf("the stand-in got %+v", got)
		}
	})

	t.Run("units", func(t *testing.T) {
		c, refusals, _ := relayed(t, bus, Policy{})
		stop := func(unit string) *dbustest.Message {
			return c.call(systemd, "/org/freedesktop/systemd1", sdMgr, "StopUnit", "ss", unit, "replace")
		}
		text := denied(t, stop("gdm.service"), c, sdMgr+".StopUnit(gdm.service) on the system bus: the session does not own gdm.service")
		if r := recv(t, refusals, "refusal"); r.Unit != "gdm.service" || r.Rule != RuleUnitNotOwned || r.Message != text {
			t.Errorf("refusal %+v", r)
		}
		m := c.call(systemd, "/org/freedesktop/systemd1", sdMgr, "StartTransientUnit", "ssa(sv)a(sa(sv))", "run-agent1.service", "fail",
			[]any{[]any{"ExecStart", variant("a(sasb)", []any{[]any{"/bin/true", []any{"/bin/true"}, false}})}}, []any{})
		if m.Type != dbuswire.TypeMethodReturn {
			t.Fatalf("StartTransientUnit: %+v", m)
		}
		if m = stop("run-agent1.service"); m.Type != dbuswire.TypeMethodReturn {
			t.Errorf("StopUnit of the unit the client started: %+v", m)
		}
		// Started by name, refused by systemd: not the session's.
		if m = c.call(systemd, "/org/freedesktop/systemd1", sdMgr, "StartTransientUnit", "ssa(sv)a(sa(sv))", "exists.service", "fail", []any{}, []any{}); m.Type != dbuswire.TypeError {
			t.Fatalf("StartTransientUnit of exists.service: %+v", m)
		}
		denied(t, stop("exists.service"), c, sdMgr+".StopUnit(exists.service)")
		// The unit object's Stop, by its escaped path.
		m = c.call(systemd, "/org/freedesktop/systemd1/unit/gdm_2eservice", sdUnit, "Stop", "s", "replace")
		denied(t, m, c, sdUnit+".Stop on gdm.service")
		if m = c.call(systemd, "/org/freedesktop/systemd1/unit/run_2dagent1_2eservice", sdUnit, "Stop", "s", "replace"); m.Type != dbuswire.TypeMethodReturn {
			t.Errorf("Unit.Stop of the unit the client started: %+v", m)
		}
		var got []string
		for range 4 {
			r := recv(t, sd, "systemd1 call")
			got = append(got, r.member+" "+r.arg+r.path)
		}
		want := []string{"StartTransientUnit run-agent1.service/org/freedesktop/systemd1", "StopUnit run-agent1.service/org/freedesktop/systemd1",
			"StartTransientUnit exists.service/org/freedesktop/systemd1", "Stop replace/org/freedesktop/systemd1/unit/run_2dagent1_2eservice"}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("systemd1 got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("fds", func(t *testing.T) {
		c, _, _ := relayed(t, bus, Policy{})
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		unix.Write(p[1], []byte("to the service"))
		unix.Close(p[1])
		m := c.callFDs([]int{p[0]}, "org.freedesktop.Notifications", "/org/freedesktop/Notifications", "org.paddock.Test", "ReadFD", "h", 0)
		unix.Close(p[0])
		if m.Type != dbuswire.TypeMethodReturn || m.Signature != "s" || m.Body[0] != "to the service" {
			t.Errorf("ReadFD: %+v, want the pipe's contents", m)
		}
		recv(t, notes, "ReadFD")
		m = c.call("org.freedesktop.Notifications", "/org/freedesktop/Notifications", "org.paddock.Test", "OpenFD", "")
		recv(t, notes, "OpenFD")
		if m.Type != dbuswire.TypeMethodReturn || m.UnixFDs != 1 || len(m.FDs) != 1 {
			t.Fatalf("OpenFD: %+v with %d fds", m, len(m.FDs))
		}
		got, _ := io.ReadAll(os.NewFile(uintptr(m.FDs[0]), "from the service"))
		if string(got) != "from the service" {
			t.Errorf("the fd the service returned reads %q", got)
		}

		// A refused call's fd is closed: once the refusal is back and
		// the client closed its own copy, the pipe has no reader.
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(p[1])
		m = c.callFDs([]int{p[0]}, login1, "/org/freedesktop/login1", l1Mgr, "PowerOff", "h", 0)
		unix.Close(p[0])
		denied(t, m, c, l1Mgr+".PowerOff")
		if _, err := unix.Write(p[1], []byte("x")); !errors.Is(err, unix.EPIPE) {
			t.Errorf("write to the pipe whose read end went with a refused call: %v, want EPIPE (the relay kept the fd)", err)
		}
	})

	t.Run("a large message", func(t *testing.T) {
		c, _, _ := relayed(t, bus, Policy{})
		big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
		m := c.call("org.freedesktop.Notifications", "/org/freedesktop/Notifications", "org.freedesktop.Notifications", "Notify",
			"susssasa{sv}i", "paddock", 0, "", big, big, []any{}, []any{}, 5000)
		if m.Type != dbuswire.TypeMethodReturn {
			t.Fatalf("Notify of 2 MiB: %+v", m)
		}
		if got := recv(t, notes, "Notify"); got.arg != big {
			t.Errorf("the stand-in got a summary of %d bytes, want %d", len(got.arg), len(big))
		}
	})

	t.Run("malformed", func(t *testing.T) {
		c, _, done := relayed(t, bus, Policy{})
		if _, err := c.c.Write([]byte("this is no message\x00\x00\x00\x00")); err != nil {
			t.Fatal(err)
		}
		err := recv(t, done, "end of Relay")
		if err == nil || !strings.Contains(err.Error(), "endianness") {
			t.Errorf("Relay after a malformed message: %v, want an error about it", err)
		}
		// What the bus sent before (its NameAcquired signal) may come
		// first; then the end.
		for {
			m, err := c.read()
			if err != nil {
				break
			}
			if m.Type != dbuswire.TypeSignal {
				t.Fatalf("after a malformed message the client got %+v, want the connection's end", m)
			}
		}
	})
}

// fakeBus serves the server's side of D-Bus on c: it accepts any
// authentication, then answers each message with what answer returns
// (nil: nothing), until c closes.
func fakeBus(c *net.UnixConn, answer func(h header) []byte) {
	w := newWire(c, "server")
	if w.fill(1) != nil || w.buf[0] != 0 {
		return
	}
	w.r++
	for {
		l, err := w.line()
		if err != nil {
			return
		}
		switch {
		case bytes.HasPrefix(l, []byte("AUTH")):
			c.Write([]byte("OK 0123456789abcdef0123456789abcdef\r\n"))
		case bytes.HasPrefix(l, []byte("NEGOTIATE_UNIX_FD")):
			c.Write([]byte("AGREE_UNIX_FD\r\n"))
		}
		if bytes.HasPrefix(l, []byte("BEGIN")) {
			break
		}
	}
	for {
		_, h, fds, err := w.message()
		if err != nil {
			return
		}
		closeFDs(fds)
		if reply := answer(h); reply != nil {
			if send(c, reply, nil) != nil {
				return
			}
		}
	}
}

// TestPeerToPeer: on a connection without a bus (systemd's private
// socket), no Hello comes, and a refusal is answered at once.
func TestPeerToPeer(t *testing.T) {
	agent, client := socketpair(t)
	paddock, server := socketpair(t)
	done := make(chan error, 1)
	go func() { done <- Relay(client, paddock, "systemd private", Policy{}, nil) }()
	served := make(chan string, 4)
	go fakeBus(server, func(h header) []byte {
		served <- h.member
		return encodeMessage(dbuswire.TypeMethodReturn, dbuswire.FlagNoReplyExpected, h.serial, []field{{code: dbuswire.FieldReplySerial, typ: 'u', u: h.serial}}, nil)
	})
	c := connect(t, agent, false)
	m := c.call(systemd, "/org/freedesktop/systemd1", sdMgr, "KillUnit", "ssi", "gdm.service", "all", 9)
	denied(t, m, c, sdMgr+".KillUnit(gdm.service) on the systemd private bus")
	if m.Destination != "" {
		t.Errorf("a peer-to-peer error with destination %q", m.Destination)
	}
	if m = c.call(systemd, "/org/freedesktop/systemd1", sdMgr, "GetUnit", "s", "gdm.service"); m.Type != dbuswire.TypeMethodReturn {
		t.Errorf("GetUnit: %+v", m)
	}
	if m := recv(t, served, "served call"); m != "GetUnit" {
		t.Errorf("the server got %s first, want GetUnit", m)
	}
	server.Close()
	if err := recv(t, done, "end of Relay"); err != nil {
		t.Errorf("Relay after the server closed: %v", err)
	}
}

// TestRefusalAfterHello: sd-bus sends its first call right behind its
// Hello and takes any first message but the Hello's reply for a broken
// bus. A bus that answers the Hello only after the relay refused the call
// behind it still gets its reply to the client first, then the refusal,
// addressed to the unique name the reply gave.
func TestRefusalAfterHello(t *testing.T) {
	agent, client := socketpair(t)
	paddock, server := socketpair(t)
	refused := make(chan Refusal, 1)
	go Relay(client, paddock, "system", Policy{}, func(r Refusal) { refused <- r })
	go fakeBus(server, func(h header) []byte {
		if h.member != "Hello" {
			return nil
		}
		select {
		case <-refused:
		case <-time.After(wait):
			return nil // the client then waits in vain, and fails
		}
		return encodeMessage(dbuswire.TypeMethodReturn, dbuswire.FlagNoReplyExpected, 1, []field{
			{code: dbuswire.FieldReplySerial, typ: 'u', u: h.serial}, {code: dbuswire.FieldDestination, typ: 's', s: ":1.42"},
			{code: dbuswire.FieldSender, typ: 's', s: "org.freedesktop.DBus"}, {code: dbuswire.FieldSignature, typ: 'g', s: "s"},
		}, encodeBody("s", ":1.42"))
	})
	c := connect(t, agent, false)
	hello := c.send(0, nil, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello", "")
	power := c.send(0, nil, login1, "/org/freedesktop/login1", l1Mgr, "PowerOff", "b", false)
	m, err := c.read()
	if err != nil || m.ReplySerial != hello || m.Signature != "s" {
		t.Fatalf("first message %+v (%v), want the reply to Hello", m, err)
	}
	c.name = m.Body[0].(string)
	denied(t, c.reply(power), c, l1Mgr+".PowerOff")
}

// listenRelay runs a relay listener: each connection to it is relayed
// to the bus at busPath, as paddock relays an agent's. It returns the
// listener's path, the refusals, and each Relay's result.
func listenRelay(t *testing.T, busPath string, p Policy) (string, <-chan Refusal, func() []error) {
	t.Helper()
	path := filepath.Join(sockettest.ShortDir(t), "relay")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	refusals := make(chan Refusal, 64)
	results := make(chan error, 64)
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			accepted.Add(1)
			bus, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: busPath, Net: "unix"})
			if err != nil {
				c.Close()
				results <- err
				continue
			}
			go func() { results <- Relay(c, bus, "system", p, func(r Refusal) { refusals <- r }) }()
		}
	}()
	// ended returns the results of the relays of the connections made so
	// far, whose clients have all exited.
	ended := func() []error {
		var errs []error
		for range accepted.Load() {
			errs = append(errs, recv(t, results, "end of a relay"))
		}
		return errs
	}
	return path, refusals, ended
}

// TestRealClients: GLib's gdbus, libdbus's dbus-send and sd-bus's busctl,
// through a relay to a real dbus-daemon, get paddock's refusal of
// PowerOff and make a Notifications call that works. sd-bus shows every
// AccessDenied error as "Access denied", whatever its message (systemd's
// bus_error_message does so on purpose): busctl says that much, and the
// refusal with paddock's message is in the journal's callback.
func TestRealClients(t *testing.T) {
	bus := startBus(t)
	login := standIn(t, bus, login1)
	sd := standIn(t, bus, systemd)
	notes := standIn(t, bus, "org.freedesktop.Notifications")
	relay, refusals, ended := listenRelay(t, bus, Policy{})
	addr := "unix:path=" + relay
	const paddockSays = "paddock refused org.freedesktop.login1.Manager.PowerOff on the system bus: power control needs the user's explicit intent"
	type step struct {
		args   []string
		fails  bool
		output []string // what the output holds
		callee <-chan record
		member string // the call the callee gets; "": none
	}
	clients := map[string][]step{
		"gdbus": {
			{[]string{"call", "--system", "--dest", login1, "--object-path", "/org/freedesktop/login1", "--method", l1Mgr + ".PowerOff", "false"},
				true, []string{"GDBus.Error:org.freedesktop.DBus.Error.AccessDenied: " + paddockSays, "PADDOCK_ALLOW_POWER_CONTROL=1 paddock run"}, nil, ""},
			{[]string{"call", "--system", "--dest", login1, "--object-path", "/org/freedesktop/login1", "--method", l1Mgr + ".CanPowerOff"},
				false, nil, login, "CanPowerOff"},
			{[]string{"call", "--session", "--dest", "org.freedesktop.Notifications", "--object-path", "/org/freedesktop/Notifications",
				"--method", "org.freedesktop.Notifications.Notify", "paddock", "0", "", "build done", "", "[]", "{}", "5000"},
				false, []string{"(uint32 42,)"}, notes, "Notify"},
		},
		"dbus-send": {
			{[]string{"--system", "--print-reply", "--dest=" + login1, "/org/freedesktop/login1", l1Mgr + ".PowerOff", "boolean:false"},
				true, []string{"Error org.freedesktop.DBus.Error.AccessDenied: " + paddockSays}, nil, ""},
			{[]string{"--system", "--print-reply", "--dest=" + login1, "/org/freedesktop/login1", l1Mgr + ".CanPowerOff"},
				false, []string{"method return"}, login, "CanPowerOff"},
			// dbus-send cannot write Notify's a{sv}: it asks the
			// Notifications service for its capabilities instead.
			{[]string{"--session", "--print-reply", "--dest=org.freedesktop.Notifications", "/org/freedesktop/Notifications", "org.freedesktop.Notifications.GetCapabilities"},
				false, []string{`string "body"`}, notes, "GetCapabilities"},
		},
		"busctl": {
			{[]string{"--address=" + addr, "call", login1, "/org/freedesktop/login1", l1Mgr, "PowerOff", "b", "false"},
				true, []string{"Call failed: Access denied"}, nil, ""},
			{[]string{"--address=" + addr, "call", systemd, "/org/freedesktop/systemd1", sdMgr, "StopUnit", "ss", "gdm.service", "replace"},
				true, []string{"Call failed: Access denied"}, nil, ""},
			{[]string{"--address=" + addr, "call", login1, "/org/freedesktop/login1", l1Mgr, "CanPowerOff"},
				false, nil, login, "CanPowerOff"},
			{[]string{"--address=" + addr, "call", "org.freedesktop.Notifications", "/org/freedesktop/Notifications", "org.freedesktop.Notifications",
				"Notify", "susssasa{sv}i", "paddock", "0", "", "build done", "", "0", "0", "5000"},
				false, []string{"u 42"}, notes, "Notify"},
		},
	}
	for _, name := range []string{"gdbus", "dbus-send", "busctl"} {
		t.Run(name, func(t *testing.T) {
			bin, err := exec.LookPath(name)
			if err != nil {
				t.Skipf("needs %s: %v", name, err)
			}
			for _, s := range clients[name] {
				cmd := exec.Command(bin, s.args...)
				cmd.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+addr, "DBUS_SESSION_BUS_ADDRESS="+addr)
				out, err := cmd.CombinedOutput()
				if (err != nil) != s.fails {
					t.Fatalf("%s %s: %v, want failed=%v:\n%s", name, strings.Join(s.args, " "), err, s.fails, out)
				}
				for _, w := range s.output {
					if !strings.Contains(string(out), w) {
						t.Errorf("%s %s printed\n%s\nwant it to hold %q", name, strings.Join(s.args, " "), out, w)
					}
				}
				if s.fails {
					r := recv(t, refusals, "refusal")
					if !strings.HasPrefix(r.Message, "paddock refused "+r.Interface+"."+r.Member) || !strings.Contains(strings.Join(s.args, " "), r.Member) {
						t.Errorf("refusal %+v for %s", r, strings.Join(s.args, " "))
					}
				}
				if s.callee != nil {
					// The callee's next call is this one: the refused
					// calls before it never reached it. (gdbus asks
					// for the object's introspection first.)
					got := recv(t, s.callee, s.member)
					for got.member == "Introspect" {
						got = recv(t, s.callee, s.member)
					}
					if got.member != s.member {
						t.Errorf("%s: the stand-in got %+v, want %s", name, got, s.member)
					}
				}
			}
		})
	}
	select {
	case r := <-refusals:
		t.Errorf("an unexpected refusal: %+v", r)
	case r := <-sd:
		t.Errorf("systemd1 got %+v", r)
	default:
	}
	for _, err := range ended() {
		if err != nil {
			t.Errorf("a relay ended with %v", err)
		}
	}
}

// withFDs adds a UNIX_FDS header field to a message.
func withFDs(msg []byte, n int) []byte {
	h, err := parseHeader(msg)
	if err != nil {
		panic(err)
	}
	fields := []field{{code: dbuswire.FieldPath, typ: 'o', s: h.path}, {code: dbuswire.FieldMember, typ: 's', s: h.member}, {code: dbuswire.FieldUnixFDs, typ: 'u', u: uint32(n)}}
	if h.iface != "" {
		fields = append(fields, field{code: dbuswire.FieldInterface, typ: 's', s: h.iface})
	}
	if h.dest != "" {
		fields = append(fields, field{code: dbuswire.FieldDestination, typ: 's', s: h.dest})
	}
	if h.sig != "" {
		fields = append(fields, field{code: dbuswire.FieldSignature, typ: 'g', s: h.sig})
	}
	return encodeMessage(h.typ, h.flags, h.serial, fields, msg[h.bodyOff:])
}

// TestSendManyFDs: a message with more descriptors than one sendmsg
// carries (SCM_MAX_FD, 253) arrives whole, each in its place.
func TestSendManyFDs(t *testing.T) {
	a, b := socketpair(t)
	var want, fds []int
	for range 300 {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
		var st unix.Stat_t
		unix.Fstat(fd, &st)
		want = append(want, int(st.Ino))
	}
	defer closeFDs(fds)
	msg := withFDs(callMsg("a.b", "/", "a.b", "C", "s", "x"), len(fds))
	errc := make(chan error, 1)
	go func() { errc <- send(a, msg, fds) }()
	w := newWire(b, "test")
	got, h, gotFDs, err := w.message()
	if err != nil {
		t.Fatal(err)
	}
	defer closeFDs(gotFDs)
	if err := recv(t, errc, "send"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) || h.unixFDs != 300 || len(gotFDs) != 300 {
		t.Fatalf("got %d bytes (same: %v) with %d fds", len(got), bytes.Equal(got, msg), len(gotFDs))
	}
	for i, fd := range gotFDs {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || int(st.Ino) != want[i] {
			t.Fatalf("fd %d: inode %d (%v), want %d", i, st.Ino, err, want[i])
		}
	}
}
