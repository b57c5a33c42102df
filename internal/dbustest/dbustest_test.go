package dbustest

import (
	"errors"
	"io"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/paddock-dev/paddock/internal/dbuswire"
)

// TestRoundTrip: each type encoded and decoded again gives the value
// back, in the Go type Decode returns for it.
func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		sig  string
		in   []any
		want []any // nil: in
	}{
		{"", nil, []any{}},
		{"y", []any{200}, []any{byte(200)}},
		{"b", []any{true}, nil},
		{"nq", []any{-2, 65535}, []any{int16(-2), uint16(65535)}},
		{"iuh", []any{int32(-7), 42, 0}, []any{int32(-7), uint32(42), uint32(0)}},
		{"xtd", []any{-1, uint64(math.MaxUint64), 1.5}, []any{int64(-1), uint64(math.MaxUint64), 1.5}},
		{"sog", []any{"build done", "/org/freedesktop/login1", "a{sv}"}, nil},
		{"yv", []any{1, Variant{"au", []any{1, 2}}}, []any{byte(1), Variant{"au", []any{uint32(1), uint32(2)}}}},
		{"susssasa{sv}i", []any{"agent", 0, "", "build done", "", []any{}, []any{[]any{"urgency", Variant{"y", 1}}}, 5000},
			[]any{"agent", uint32(0), "", "build done", "", []any{}, []any{[]any{"urgency", Variant{"y", byte(1)}}}, int32(5000)}},
		{"a(sasb)", []any{[]any{[]any{"/bin/true", []any{"/bin/true"}, false}}}, nil},
		{"at", []any{[]any{}}, nil},
	} {
		m := MethodCall("org.example", "/org/example", "org.example.I", "M", c.sig, c.in...)
		m.Serial, m.Flags, m.FDs = 9, FlagNoReplyExpected, []int{-1, -1}
		b, err := m.Encode()
		if err != nil {
			t.Errorf("%s: encode: %v", c.sig, err)
			continue
		}
		got, err := Decode(b)
		if err != nil {
			t.Errorf("%s: decode: %v", c.sig, err)
			continue
		}
		want := c.want
		if want == nil {
			want = c.in
		}
		if !reflect.DeepEqual(got.Body, want) {
			t.Errorf("%s: decoded %#v, want %#v", c.sig, got.Body, want)
		}
		if got.Type != TypeMethodCall || got.Flags != FlagNoReplyExpected || got.Serial != 9 || got.Destination != "org.example" ||
			got.Path != "/org/example" || got.Interface != "org.example.I" || got.Member != "M" || got.Signature != c.sig || got.UnixFDs != 2 {
			t.Errorf("%s: decoded header %+v", c.sig, got)
		}
	}
}

// TestDecodeBigEndian: a big-endian message (built by hand) decodes.
func TestDecodeBigEndian(t *testing.T) {
	b := []byte{
		'B', TypeSignal, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 39,
		dbuswire.FieldPath, 1, 'o', 0, 0, 0, 0, 1, '/', 0, 0, 0, 0, 0, 0, 0,
		dbuswire.FieldMember, 1, 's', 0, 0, 0, 0, 1, 'M', 0, 0, 0, 0, 0, 0, 0,
		dbuswire.FieldSignature, 1, 'g', 0, 1, 'u', 0, 0,
		0, 0, 0, 7,
	}
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.Type != TypeSignal || m.Serial != 1 || m.Path != "/" || m.Member != "M" || !reflect.DeepEqual(m.Body, []any{uint32(7)}) {
		t.Errorf("decoded %+v", m)
	}
}

// TestBadInput: what cannot be encoded or decoded is an error naming it.
func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		sig  string
		args []any
		want string
	}{
		{"s", nil, "has 1 types, given 0"},
		{"u", []any{"x"}, "string for an integer type"},
		{"y", []any{256}, "out of range"},
		{"u", []any{-1}, "out of range"},
		{"a{vs}", []any{[]any{}}, "not a basic type"},
		{"(", []any{[]any{}}, "a struct without its ')'"},
		{"a", []any{[]any{}}, "ends inside a type"},
		{"v", []any{Variant{"ss", "x"}}, "want one complete type"},
		{"z", []any{1}, "type code 'z'"},
		{strings.Repeat("a", 33) + "y", []any{[]any{}}, "nested more than 32 deep"},
	} {
		if _, err := EncodeBody(c.sig, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("EncodeBody(%q, %v): %v, want an error saying %q", c.sig, c.args, err, c.want)
		}
	}
	good, err := MethodCall("a.b", "/", "a.b", "C", "s", "hello").Encode()
	if err != nil {
		t.Fatal(err)
	}
	// Strings the encoder writes as they are, which the decoder refuses
	// as the bus does.
	encode := func(s string) []byte {
		b, err := MethodCall("a.b", "/", "a.b", "C", "s", s).Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"short":             {good[:10], "10 bytes"},
		"truncated":         {good[:len(good)-1], "header says"},
		"endianness":        {append([]byte{'x'}, good[1:]...), "endianness"},
		"version":           {append(good[:3:3], append([]byte{2}, good[4:]...)...), "protocol version 2"},
		"string":            {append(good[:len(good)-1:len(good)-1], 'x'), "NUL terminator"},
		"a NUL in a string": {encode("hel\x00lo"), "a NUL at byte 3"},
		"not UTF-8":         {encode("\xffhello"), "not UTF-8"},
	} {
		if _, err := Decode(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Decode error %v, want one saying %q", name, err, c.want)
		}
	}
}

// recv waits for a value from ch, failing the test after a minute (a
// bound on a broken peer, not a wait for time to pass).
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("no %s in a minute", what)
	}
	var zero T
	return zero
}

// TestConn: a client and a stand-in service on a real dbus-daemon: a
// call answered, an error reply, a call that wants no reply, and
// descriptors both ways.
func TestConn(t *testing.T) {
	bus := StartBus(t, BusOptions{})
	svc, _, err := Dial(bus.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	if err := svc.RequestName("org.example.Svc"); err != nil {
		t.Fatal(err)
	}
	calls := make(chan string, 16)
	served := make(chan error, 1)
	go func() {
		served <- svc.Serve(func(m *Message) *Message {
			calls <- m.Member
			switch m.Member {
			case "Echo":
				return Return(m.Signature, m.Body...)
			case "ReadFD":
				if len(m.FDs) != 1 {
					return ErrorReply("org.example.Error.NoFD", "no descriptor came")
				}
				got, _ := io.ReadAll(os.NewFile(uintptr(dupFD(m.FDs[0])), "passed"))
				return Return("s", string(got))
			case "OpenFD":
				var p [2]int
				if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
					return ErrorReply("org.example.Error.Pipe", err.Error())
				}
				unix.Write(p[1], []byte("from the service"))
				unix.Close(p[1])
				r := Return("h", 0)
				r.FDs = []int{p[0]}
				return r
			}
			return ErrorReply("org.example.Error.Unknown", "no method "+m.Member)
		})
	}()

	c, name, err := Dial(bus.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, ":") {
		t.Errorf("unique name %q", name)
	}
	r, err := c.Call(MethodCall("org.example.Svc", "/", "org.example.Svc", "Echo", "sa{sv}", "hi", []any{[]any{"k", Variant{"u", 3}}}))
	if err != nil || r.Err() != nil || !reflect.DeepEqual(r.Body, []any{"hi", []any{[]any{"k", Variant{"u", uint32(3)}}}}) {
		t.Errorf("Echo: %+v %v", r, err)
	}
	r, err = c.Call(MethodCall("org.example.Svc", "/", "org.example.Svc", "Nothing", ""))
	var de *Error
	if err != nil || !errors.As(r.Err(), &de) || de.Name != "org.example.Error.Unknown" || de.Text != "no method Nothing" {
		t.Errorf("Nothing: %+v %v, want the service's error", r, err)
	}
	noReply := MethodCall("org.example.Svc", "/", "org.example.Svc", "Echo", "s", "unanswered")
	noReply.Flags = FlagNoReplyExpected
	if _, err := c.Send(noReply); err != nil {
		t.Fatal(err)
	}

	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	unix.Write(p[1], []byte("to the service"))
	unix.Close(p[1])
	call := MethodCall("org.example.Svc", "/", "org.example.Svc", "ReadFD", "h", 0)
	call.FDs = p[:1]
	r, err = c.Call(call) // the unanswered Echo's reply would come first
	unix.Close(p[0])
	if err != nil || !reflect.DeepEqual(r.Body, []any{"to the service"}) {
		t.Errorf("ReadFD: %+v %v", r, err)
	}
	r, err = c.Call(MethodCall("org.example.Svc", "/", "org.example.Svc", "OpenFD", ""))
	if err != nil || len(r.FDs) != 1 || r.UnixFDs != 1 {
		t.Fatalf("OpenFD: %+v %v", r, err)
	}
	if got, _ := io.ReadAll(os.NewFile(uintptr(r.FDs[0]), "returned")); string(got) != "from the service" {
		t.Errorf("the returned descriptor reads %q", got)
	}
	var members []string
	for range 5 {
		members = append(members, recv(t, calls, "call"))
	}
	if want := "Echo Nothing Echo ReadFD OpenFD"; strings.Join(members, " ") != want {
		t.Errorf("the service got %v, want %s", members, want)
	}
	svc.Close()
	if err := recv(t, served, "the end of Serve"); err != nil {
		t.Errorf("Serve after its connection closed: %v", err)
	}
	if _, _, err := DialAddress("tcp:host=localhost"); err == nil || !strings.Contains(err.Error(), "no unix:path=") {
		t.Errorf("DialAddress of a TCP address: %v", err)
	}
}

func dupFD(fd int) int {
	n, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return n
}

// TestAppendValue: a value appended is aligned from the buffer's start.
func TestAppendValue(t *testing.T) {
	b, err := AppendValue([]byte{1, 2, 3}, "t", 5)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{1, 2, 3, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0}; !reflect.DeepEqual(b, want) {
		t.Errorf("AppendValue: % x, want % x", b, want)
	}
	if _, err := AppendValue(nil, "ss", []any{"a", "b"}); err == nil {
		t.Error("AppendValue of two types: no error")
	}
}
