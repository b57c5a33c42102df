package dbusproxy

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/internal/dbustest"
	"github.com/paddock-dev/paddock/internal/dbuswire"
)

// variant is a value of type v, of signature sig.
func variant(sig string, v any) dbustest.Variant {
	return dbustest.Variant{Signature: sig, Value: v}
}

// encodeBody encodes args of signature sig (dbustest's encoder, not the
// relay's: the tests do not check the parser against itself).
func encodeBody(sig string, args ...any) []byte {
	b, err := dbustest.EncodeBody(sig, args...)
	if err != nil {
		panic("encodeBody: " + err.Error())
	}
	return b
}

// callMsg builds a method call (serial 7) to dest at path.
func callMsg(dest, path, iface, member, sig string, args ...any) []byte {
	return callMsgFlags(0, 7, dest, path, iface, member, sig, args...)
}

func callMsgFlags(flags byte, serial uint32, dest, path, iface, member, sig string, args ...any) []byte {
	fields := []field{{code: dbuswire.FieldPath, typ: 'o', s: path}, {code: dbuswire.FieldMember, typ: 's', s: member}}
	if iface != "" {
		fields = append(fields, field{code: dbuswire.FieldInterface, typ: 's', s: iface})
	}
	if dest != "" {
		fields = append(fields, field{code: dbuswire.FieldDestination, typ: 's', s: dest})
	}
	if sig != "" {
		fields = append(fields, field{code: dbuswire.FieldSignature, typ: 'g', s: sig})
	}
	return encodeMessage(dbuswire.TypeMethodCall, flags, serial, fields, encodeBody(sig, args...))
}

// bigEndian re-encodes a little-endian message of plain fields (strings,
// paths, signatures, uint32s) and a body of strings and uint32s only, as
// a big-endian one.
func bigEndian(t *testing.T, msg []byte) []byte {
	t.Helper()
	h, err := parseHeader(msg)
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.Clone(msg)
	out[0] = 'B'
	swap := func(at int) { binary.BigEndian.PutUint32(out[at:], binary.LittleEndian.Uint32(msg[at:])) }
	swap(4)
	swap(8)
	swap(12)
	// Swap every uint32 the header's and body's walks meet.
	d := decoder{dbuswire.Decoder{B: msg[:h.bodyOff], Order: binary.LittleEndian, Off: dbuswire.FixedLen}}
	for d.Off < len(d.B) {
		if d.Align(8) != nil || d.Off >= len(d.B) {
			break
		}
		d.Off++ // code
		sig, _ := d.Signature()
		d.Align(4)
		if sig != "g" {
			swap(d.Off)
		}
		d.skip(sig, 0)
	}
	b := decoder{dbuswire.Decoder{B: msg, Order: binary.LittleEndian, Off: h.bodyOff}}
	for _, ty := range dbuswire.Types(h.sig) {
		b.Align(4)
		if ty != "s" && ty != "u" {
			t.Fatalf("bigEndian: body type %q", ty)
		}
		swap(b.Off)
		b.skip(ty, 0)
	}
	return out
}

func TestParseHeader(t *testing.T) {
	call := callMsg("org.freedesktop.login1", "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PowerOff", "b", true)
	for _, msg := range [][]byte{call, bigEndian(t, callMsg("org.freedesktop.systemd1", "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "StopUnit", "ss", "gdm.service", "replace"))} {
		h, err := parseHeader(msg)
		if err != nil {
			t.Fatalf("parseHeader: %v", err)
		}
		if h.typ != dbuswire.TypeMethodCall || h.serial != 7 || !strings.HasPrefix(h.dest, "org.freedesktop.") || h.member == "" || h.path == "" {
			t.Errorf("parseHeader = %+v", h)
		}
		if h.member == "StopUnit" {
			if h.order != binary.BigEndian {
				t.Errorf("byte order %v, want big-endian", h.order)
			}
			b := newBody(&h, msg)
			if u, err := b.str(0); err != nil || u != "gdm.service" {
				t.Errorf("big-endian StopUnit's unit = %q, %v", u, err)
			}
			if m, err := b.str(1); err != nil || m != "replace" {
				t.Errorf("big-endian StopUnit's mode = %q, %v", m, err)
			}
		}
	}

	// Unknown header fields, of any type, are skipped.
	withUnknown := encodeMessage(dbuswire.TypeSignal, 0, 3, []field{
		{code: dbuswire.FieldPath, typ: 'o', s: "/a"}, {code: dbuswire.FieldInterface, typ: 's', s: "a.b"},
		{code: dbuswire.FieldMember, typ: 's', s: "C"},
	}, nil)
	withUnknown = appendField(withUnknown, 42, "a{sv}", []any{[]any{"k", variant("as", []any{"x", "y"})}})
	if h, err := parseHeader(withUnknown); err != nil || h.member != "C" {
		t.Errorf("a message with an unknown a{sv} field: %+v, %v", h, err)
	}

	bad := []struct {
		name string
		msg  []byte
		want string
	}{
		{"short", call[:10], "10 bytes"},
		{"endianness", set(call, 0, 'x'), "endianness"},
		{"version", set(call, 3, 2), "protocol version 2"},
		{"serial 0", setU32(call, 8, 0), "serial 0"},
		{"length", call[:len(call)-1], "the message has"},
		{"huge body", setU32(call, 4, 1<<27), "128 MiB"},
		{"huge fields", setU32(call, 12, 1<<26+8), "64 MiB"},
		{"type 0", set(call, 1, 0), "type 0"},
		{"no member", encodeMessage(dbuswire.TypeMethodCall, 0, 1, []field{{code: dbuswire.FieldPath, typ: 'o', s: "/"}}, nil), "without header field 3"},
		{"twice", encodeMessage(dbuswire.TypeMethodCall, 0, 1, []field{{code: dbuswire.FieldPath, typ: 'o', s: "/"}, {code: dbuswire.FieldMember, typ: 's', s: "A"}, {code: dbuswire.FieldMember, typ: 's', s: "B"}}, nil), "given twice"},
		{"wrong type", encodeMessage(dbuswire.TypeMethodCall, 0, 1, []field{{code: dbuswire.FieldPath, typ: 's', s: "/"}, {code: dbuswire.FieldMember, typ: 's', s: "A"}}, nil), "want 'o'"},
		{"NUL in a name", encodeMessage(dbuswire.TypeMethodCall, 0, 1, []field{{code: dbuswire.FieldPath, typ: 'o', s: "/"}, {code: dbuswire.FieldMember, typ: 's', s: "Po\x00werOff"}}, nil), "NUL"},
		{"not UTF-8", encodeMessage(dbuswire.TypeMethodCall, 0, 1, []field{{code: dbuswire.FieldPath, typ: 'o', s: "/"}, {code: dbuswire.FieldMember, typ: 's', s: "\xff"}}, nil), "UTF-8"},
		{"bad signature", encodeMessage(dbuswire.TypeMethodCall, 0, 1, []field{{code: dbuswire.FieldPath, typ: 'o', s: "/"}, {code: dbuswire.FieldMember, typ: 's', s: "A"}, {code: dbuswire.FieldSignature, typ: 'g', s: "a"}}, nil), "ends inside a type"},
		{"too many fds", encodeMessage(dbuswire.TypeMethodCall, 0, 1, []field{{code: dbuswire.FieldPath, typ: 'o', s: "/"}, {code: dbuswire.FieldMember, typ: 's', s: "A"}, {code: dbuswire.FieldUnixFDs, typ: 'u', u: maxFDs + 1}}, nil), "unix fds"},
		{"deep variant", appendField(withUnknown, 43, "v", deepVariant(70)), "64 deep"},
	}
	for _, tc := range bad {
		_, err := parseHeader(tc.msg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: parseHeader error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}

// deepVariant is a variant holding a variant ... n deep.
func deepVariant(n int) dbustest.Variant {
	v := variant("u", 1)
	for range n {
		v = variant("v", v)
	}
	return v
}

// appendField adds a header field of any type to a message without a body.
func appendField(msg []byte, code byte, sig string, v any) []byte {
	h, err := parseHeader(msg)
	if err != nil || h.bodyOff != len(msg) {
		panic("appendField: a message with a body")
	}
	e := encoder{b: bytes.Clone(msg[:dbuswire.FixedLen+int(binary.LittleEndian.Uint32(msg[12:]))])}
	e.pad(8)
	e.b = append(e.b, code)
	e.signature(sig)
	if e.b, err = dbustest.AppendValue(e.b, sig, v); err != nil {
		panic("appendField: " + err.Error())
	}
	binary.LittleEndian.PutUint32(e.b[12:], uint32(len(e.b)-dbuswire.FixedLen))
	e.pad(8)
	return e.b
}

func set(b []byte, at int, v byte) []byte {
	b = bytes.Clone(b)
	b[at] = v
	return b
}

func setU32(b []byte, at int, v uint32) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b[at:], v)
	return b
}

func TestUnitOfPath(t *testing.T) {
	for path, want := range map[string]string{
		"/org/freedesktop/systemd1/unit/gdm_2eservice":           "gdm.service",
		"/org/freedesktop/systemd1/unit/poweroff_2Etarget":       "poweroff.target",
		"/org/freedesktop/systemd1/unit/user_401000_2eservice":   "user@1000.service",
		"/org/freedesktop/systemd1/unit/poweroff_2etarget_00xyz": "poweroff.target",
		"/org/freedesktop/systemd1/unit/a_zz_2":                  "a_zz_2",
		"/org/freedesktop/systemd1/unit/_":                       "",
		"/org/freedesktop/systemd1/unit/self":                    "self",
		"/org/freedesktop/systemd1":                              "",
	} {
		if got := unitOfPath(path); got != want {
			t.Errorf("unitOfPath(%q) = %q, want %q", path, got, want)
		}
	}
}
