package dbuswire

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// header is a little-endian fixed header claiming a body of body bytes
// and header fields of fields bytes.
func header(version byte, body, fields uint32) []byte {
	b := []byte{'l', TypeMethodCall, 0, version}
	b = binary.LittleEndian.AppendUint32(b, body)
	b = binary.LittleEndian.AppendUint32(b, 1)
	return binary.LittleEndian.AppendUint32(b, fields)
}

// TestMessageLen: a message's length from its fixed header, and the
// specification's bounds on it.
func TestMessageLen(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		n    int    // the length, where no error
		want string // in the error; "" for none
	}{
		{"plain", header(1, 4, 9), 36, ""},
		{"aligned fields", header(1, 0, 16), 32, ""},
		{"the largest fields", header(1, 0, MaxArray), FixedLen + MaxArray, ""},
		{"the largest message", header(1, MaxMessage-FixedLen-8, 8), MaxMessage, ""},
		{"big-endian", []byte{'B', 1, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 9}, 36, ""},
		{"short", header(1, 0, 0)[:15], 0, "15 bytes"},
		{"endianness", append([]byte{'x'}, header(1, 0, 0)[1:]...), 0, "endianness"},
		{"version", header(2, 0, 0), 0, "protocol version 2"},
		{"fields over 64 MiB", header(1, 0, MaxArray+1), 0, "64 MiB"},
		{"message over 128 MiB", header(1, MaxMessage-FixedLen-8+1, 8), 0, "128 MiB"},
		{"body of 4 GiB", header(1, 1<<32-1, 0), 0, "128 MiB"},
	} {
		n, err := MessageLen(c.b)
		switch {
		case c.want == "" && (err != nil || n != c.n):
			t.Errorf("%s: MessageLen = %d, %v, want %d", c.name, n, err, c.n)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: MessageLen error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

// TestSignatures: what NextType, ValidSignature, SingleType and
// SplitTypes accept and refuse.
func TestSignatures(t *testing.T) {
	deepArray := strings.Repeat("a", MaxDepth) + "y"
	deepStruct := strings.Repeat("(", MaxDepth) + "y" + strings.Repeat(")", MaxDepth)
	for _, c := range []struct {
		sig   string
		types []string // nil: refused
	}{
		{"", []string{}},
		{"s", []string{"s"}},
		{"sa{sv}i", []string{"s", "a{sv}", "i"}},
		{"a(sa(sv))", []string{"a(sa(sv))"}},
		{"(ii)v", []string{"(ii)", "v"}},
		{"aaia{ha(ai)}", []string{"aai", "a{ha(ai)}"}},
		{deepArray, []string{deepArray}},
		{deepStruct, []string{deepStruct}},
		{strings.Repeat("y", MaxSig), strings.Split(strings.Repeat("y", MaxSig), "")},
		{"a", nil},
		{"()", nil},
		{"(i", nil},
		{"a{vs}", nil},
		{"a{(i)s}", nil},
		{"{sv}", nil},
		{"a{s}", nil},
		{"a{sss}", nil},
		{"z", nil},
		{"s\x00", nil},
		{"a" + deepArray, nil},
		{"(" + deepStruct + ")", nil},
		{"a{s" + deepStruct + "}", nil},
		{strings.Repeat("y", MaxSig+1), nil},
	} {
		err := ValidSignature(c.sig)
		if (err == nil) != (c.types != nil) {
			t.Errorf("ValidSignature(%.40q) = %v, want accepted %v", c.sig, err, c.types != nil)
		}
		ts, err := SplitTypes(c.sig)
		if c.types == nil {
			if err == nil || !strings.Contains(err.Error(), "signature ") {
				t.Errorf("SplitTypes(%.40q) = %v, %v, want an error naming the signature", c.sig, ts, err)
			}
			continue
		}
		if err != nil || strings.Join(ts, ",") != strings.Join(c.types, ",") {
			t.Errorf("SplitTypes(%.40q) = %q, %v, want %q", c.sig, ts, err, c.types)
		}
		if got := Types(c.sig); strings.Join(got, ",") != strings.Join(c.types, ",") {
			t.Errorf("Types(%.40q) = %q, want %q", c.sig, got, c.types)
		}
		if err := SingleType(c.sig); (err == nil) != (len(c.types) == 1) {
			t.Errorf("SingleType(%.40q) = %v, want accepted %v", c.sig, err, len(c.types) == 1)
		}
	}
	for _, c := range []struct {
		sig  string
		i    int
		end  int
		want string // in the error; "" for none
	}{
		{"sa{sv}i", 1, 6, ""},
		{"sa{sv}i", 6, 7, ""},
		{"s", 1, 0, "ends inside a type"},
		{"a{vs}", 0, 0, "not a basic type"},
		{"()", 0, 0, "empty struct"},
		{"(y", 0, 0, "without its ')'"},
		{"a{sss}", 0, 0, "exactly a key and a value"},
		{"a" + deepArray, 0, 0, "arrays nested more than 32 deep"},
		{"(" + deepStruct + ")", 0, 0, "structs nested more than 32 deep"},
		{"iz", 1, 0, "type code 'z' at 1"},
	} {
		end, err := NextType(c.sig, c.i)
		switch {
		case c.want == "" && (err != nil || end != c.end):
			t.Errorf("NextType(%.40q, %d) = %d, %v, want %d", c.sig, c.i, end, err, c.end)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("NextType(%.40q, %d) error %v, want one saying %q", c.sig, c.i, err, c.want)
		}
	}
}

// str is a little-endian STRING of the bytes s, then the terminator nul.
func str(s string, nul byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(s)))
	return append(append(b, s...), nul)
}

// TestDecoderStr: a string is read as the bus reads it: terminated by
// NUL, with none inside, in UTF-8, within its message.
func TestDecoderStr(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		off  int
		s    string // read, where no error
		want string // in the error; "" for none
	}{
		{"plain", str("org.freedesktop.login1", 0), 0, "org.freedesktop.login1", ""},
		{"empty", str("", 0), 0, "", ""},
		{"UTF-8", str("Grüße", 0), 0, "Grüße", ""},
		{"aligned", append([]byte{9, 9, 9, 9}, str("a", 0)...), 1, "a", ""},
		{"a NUL inside", str("Po\x00werOff", 0), 0, "", "a NUL at byte 2"},
		{"no terminator", str("PowerOff", 'x'), 0, "", "without its NUL terminator"},
		{"not UTF-8", str("\xff\xfe", 0), 0, "", "not UTF-8"},
		{"past the end", str("PowerOff", 0)[:10], 0, "", ErrShort.Error()},
		{"a length over 128 MiB", binary.LittleEndian.AppendUint32(nil, MaxMessage+1), 0, "", ErrShort.Error()},
		{"no length", []byte{1, 0}, 0, "", ErrShort.Error()},
	} {
		d := Decoder{B: c.b, Order: binary.LittleEndian, Off: c.off}
		s, err := d.Str()
		switch {
		case c.want == "" && (err != nil || s != c.s || d.Off != len(c.b)):
			t.Errorf("%s: Str = %q, %v at %d, want %q at %d", c.name, s, err, d.Off, c.s, len(c.b))
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: Str error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

// TestDecoderSignature: a SIGNATURE read is checked as one.
func TestDecoderSignature(t *testing.T) {
	for sig, want := range map[string]string{
		"a{sv}":  "",
		"":       "",
		"a{vs}":  `signature "a{vs}": a dict entry whose key`,
		"s\xff":  "not UTF-8",
		"a\x00s": "a NUL at byte 1",
		"(y)(y":  "without its ')'",
	} {
		d := Decoder{B: append(append([]byte{byte(len(sig))}, sig...), 0), Order: binary.BigEndian}
		s, err := d.Signature()
		switch {
		case want == "" && (err != nil || s != sig):
			t.Errorf("Signature of %q = %q, %v", sig, s, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("Signature of %q: error %v, want one saying %q", sig, err, want)
		}
	}
}

// TestDecoderArray: an array's elements are read within its length, which
// is bounded by the specification and by what is left.
func TestDecoderArray(t *testing.T) {
	// au of two elements, then a byte after it.
	b := binary.BigEndian.AppendUint32(nil, 8)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint32(b, 2)
	b = append(b, 7)
	d := Decoder{B: b, Order: binary.BigEndian}
	end, err := d.Array(4)
	if err != nil || end != 12 {
		t.Fatalf("Array = %d, %v, want 12", end, err)
	}
	var got []uint32
	err = d.Elements(end, func() error {
		v, err := d.U32()
		got = append(got, v)
		return err
	})
	if err != nil || len(got) != 2 || got[1] != 2 || d.Off != 12 || len(d.B) != len(b) {
		t.Errorf("Elements: %v, %v, at %d of %d", got, err, d.Off, len(d.B))
	}

	// An element that runs past its array's end.
	d = Decoder{B: b, Order: binary.BigEndian}
	binary.BigEndian.PutUint32(d.B, 6)
	end, _ = d.Array(4)
	err = d.Elements(end, func() error { _, err := d.U32(); return err })
	if !errors.Is(err, ErrShort) {
		t.Errorf("an element past its array's end: %v, want ErrShort", err)
	}

	for _, c := range []struct {
		n    uint32
		want string
	}{{MaxArray + 1, "64 MiB"}, {100, ErrShort.Error()}} {
		d := Decoder{B: binary.LittleEndian.AppendUint32(nil, c.n), Order: binary.LittleEndian}
		if _, err := d.Array(1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("an array of %d bytes: %v, want an error saying %q", c.n, err, c.want)
		}
	}
}

// TestUnixPath: the path of a bus address's first unix:path= entry.
func TestUnixPath(t *testing.T) {
	for addr, want := range map[string]string{
		"unix:path=/run/dbus/system_bus_socket":                       "/run/dbus/system_bus_socket",
		"unix:guid=0123,path=/run/user/1000/bus":                      "/run/user/1000/bus",
		"tcp:host=localhost,port=1;unix:path=/tmp/b;unix:path=/tmp/c": "/tmp/b",
		"unix:abstract=/tmp/dbus-x":                                   "",
		"tcp:host=localhost,port=1":                                   "",
		"":                                                            "",
	} {
		if got := UnixPath(addr); got != want {
			t.Errorf("UnixPath(%q) = %q, want %q", addr, got, want)
		}
	}
}
