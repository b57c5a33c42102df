package dbustest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Message types (the second byte of every message).
const (
	TypeMethodCall   = 1
	TypeMethodReturn = 2
	TypeError        = 3
	TypeSignal       = 4
)

// FlagNoReplyExpected marks a call whose sender wants no reply.
const FlagNoReplyExpected = 0x1

// Header field codes.
const (
	fieldPath        = 1
	fieldInterface   = 2
	fieldMember      = 3
	fieldErrorName   = 4
	fieldReplySerial = 5
	fieldDestination = 6
	fieldSender      = 7
	fieldSignature   = 8
	fieldUnixFDs     = 9
)

const (
	fixedLen   = 16      // endianness, type, flags, version, body length, serial, fields length
	maxMessage = 1 << 27 // 128 MiB, the specification's bound on a message
	maxDepth   = 64      // containers in containers, as the specification bounds them
)

// Message is one D-Bus message, as sent or as received. Absent header
// fields are empty.
type Message struct {
	Type, Flags byte
	// Serial is the sender's number of the message; Conn.Send sets it.
	Serial uint32
	// ReplySerial is the serial of the call a reply or error answers.
	ReplySerial                                             uint32
	Path, Interface, Member, ErrorName, Destination, Sender string
	// Signature is the body's: the complete types of Body's values.
	Signature string
	// UnixFDs is the UNIX_FDS header field: how many descriptors came
	// with the message. Encode writes len(FDs) where it is 0.
	UnixFDs uint32
	// Body holds the arguments, one Go value per complete type of
	// Signature (see EncodeBody for the values of each type).
	Body []any
	// FDs are the descriptors sent with the message, or received with it
	// (the receiver closes them).
	FDs []int
}

// Variant is a value of D-Bus type v: a value with its own signature.
type Variant struct {
	Signature string
	Value     any
}

// Error is a D-Bus error reply as a Go error.
type Error struct {
	Name, Text string
}

func (e *Error) Error() string { return e.Name + ": " + e.Text }

// Err is the error an error reply stands for: *Error with its name and
// its first string argument; nil for any other message.
func (m *Message) Err() error {
	if m.Type != TypeError {
		return nil
	}
	text := ""
	if len(m.Body) > 0 {
		text, _ = m.Body[0].(string)
	}
	return &Error{Name: m.ErrorName, Text: text}
}

// MethodCall is a call of member of interface iface on the object at path
// of dest, with args of signature sig.
func MethodCall(dest, path, iface, member, sig string, args ...any) *Message {
	return &Message{Type: TypeMethodCall, Destination: dest, Path: path, Interface: iface, Member: member, Signature: sig, Body: args}
}

// Return is a method return with args of signature sig, for a Handler.
func Return(sig string, args ...any) *Message {
	return &Message{Type: TypeMethodReturn, Signature: sig, Body: args}
}

// ErrorReply is an error reply named name whose message is text, for a
// Handler.
func ErrorReply(name, text string) *Message {
	return &Message{Type: TypeError, ErrorName: name, Signature: "s", Body: []any{text}}
}

// Encode builds the whole message, little-endian.
func (m *Message) Encode() ([]byte, error) {
	body, err := EncodeBody(m.Signature, m.Body...)
	if err != nil {
		return nil, fmt.Errorf("encode the body of %s: %w", m.describe(), err)
	}
	var fields []any
	str := func(code byte, sig, v string) {
		if v != "" {
			fields = append(fields, []any{code, Variant{sig, v}})
		}
	}
	u32 := func(code byte, v uint32) {
		if v != 0 {
			fields = append(fields, []any{code, Variant{"u", v}})
		}
	}
	str(fieldPath, "o", m.Path)
	str(fieldInterface, "s", m.Interface)
	str(fieldMember, "s", m.Member)
	str(fieldErrorName, "s", m.ErrorName)
	u32(fieldReplySerial, m.ReplySerial)
	str(fieldDestination, "s", m.Destination)
	str(fieldSender, "s", m.Sender)
	str(fieldSignature, "g", m.Signature)
	fds := m.UnixFDs
	if fds == 0 {
		fds = uint32(len(m.FDs))
	}
	u32(fieldUnixFDs, fds)
	if len(body) > maxMessage {
		return nil, fmt.Errorf("encode %s: a body of %d bytes, over the %d a message may have", m.describe(), len(body), maxMessage)
	}
	e := encoder{b: []byte{'l', m.Type, m.Flags, 1}}
	e.b = binary.LittleEndian.AppendUint32(e.b, uint32(len(body)))
	e.b = binary.LittleEndian.AppendUint32(e.b, m.Serial)
	if err := e.value("a(yv)", fields); err != nil {
		return nil, fmt.Errorf("encode the header of %s: %w", m.describe(), err)
	}
	e.pad(8)
	return append(e.b, body...), nil
}

// describe names a message in errors.
func (m *Message) describe() string {
	switch m.Type {
	case TypeMethodCall:
		return "call " + m.Interface + "." + m.Member
	case TypeSignal:
		return "signal " + m.Interface + "." + m.Member
	case TypeError:
		return fmt.Sprintf("error %s (to call %d)", m.ErrorName, m.ReplySerial)
	case TypeMethodReturn:
		return fmt.Sprintf("return (to call %d)", m.ReplySerial)
	}
	return fmt.Sprintf("message of type %d", m.Type)
}

// EncodeBody encodes args, of signature sig, as a little-endian body
// starting at an 8-aligned offset. The values of each type: y byte (or any
// integer), b bool, n q i u h x t any integer type, d float64 (or any
// integer), s o g string, v Variant, an array []any of its elements, a
// struct or a dict entry []any of its members; an a{..} is an array of
// dict entries, each []any{key, value}. Decode returns the same kinds
// (each integer type as its Go type: byte, int16, uint16, int32, uint32,
// int64, uint64; h as uint32).
func EncodeBody(sig string, args ...any) ([]byte, error) {
	ts, err := splitTypes(sig)
	if err != nil {
		return nil, err
	}
	if len(ts) != len(args) {
		return nil, fmt.Errorf("signature %q has %d types, given %d values", sig, len(ts), len(args))
	}
	var e encoder
	for i, t := range ts {
		if err := e.value(t, args[i]); err != nil {
			return nil, fmt.Errorf("argument %d (%s): %w", i, t, err)
		}
	}
	return e.b, nil
}

// AppendValue appends v, of the complete type t, to b, little-endian and
// aligned as in a message that starts at b[0] (a test that builds a
// header field of its own). It nests containers as deep as v does, past
// the specification's bounds, so that a parser's refusal of them can be
// tested.
func AppendValue(b []byte, t string, v any) ([]byte, error) {
	if ts, err := splitTypes(t); err != nil || len(ts) != 1 {
		return nil, fmt.Errorf("type %q: want one complete type (%v)", t, err)
	}
	e := encoder{b: b}
	if err := e.value(t, v); err != nil {
		return nil, fmt.Errorf("a value of type %s: %w", t, err)
	}
	return e.b, nil
}

type encoder struct{ b []byte }

func (e *encoder) pad(a int) {
	for len(e.b)%a != 0 {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) u32(v uint32) {
	e.pad(4)
	e.b = binary.LittleEndian.AppendUint32(e.b, v)
}

// value appends v, of the complete type t.
func (e *encoder) value(t string, v any) error {
	switch t[0] {
	case 'y':
		n, err := integer(v, 0, math.MaxUint8)
		if err != nil {
			return err
		}
		e.b = append(e.b, byte(n))
	case 'b':
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("%T for a boolean, want bool", v)
		}
		n := uint32(0)
		if b {
			n = 1
		}
		e.u32(n)
	case 'n', 'q':
		lo, hi := int64(math.MinInt16), int64(math.MaxInt16)
		if t[0] == 'q' {
			lo, hi = 0, math.MaxUint16
		}
		n, err := integer(v, lo, hi)
		if err != nil {
			return err
		}
		e.pad(2)
		e.b = binary.LittleEndian.AppendUint16(e.b, uint16(n))
	case 'i', 'u', 'h':
		lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
		if t[0] != 'i' {
			lo, hi = 0, math.MaxUint32
		}
		n, err := integer(v, lo, hi)
		if err != nil {
			return err
		}
		e.u32(uint32(n))
	case 'x', 't':
		var u uint64
		if x, ok := v.(uint64); ok && t[0] == 't' {
			u = x
		} else {
			lo := int64(math.MinInt64)
			if t[0] == 't' {
				lo = 0
			}
			n, err := integer(v, lo, math.MaxInt64)
			if err != nil {
				return err
			}
			u = uint64(n)
		}
		e.pad(8)
		e.b = binary.LittleEndian.AppendUint64(e.b, u)
	case 'd':
		f, ok := v.(float64)
		if !ok {
			n, err := integer(v, math.MinInt64, math.MaxInt64)
			if err != nil {
				return fmt.Errorf("%T for a double, want float64 or an integer", v)
			}
			f = float64(n)
		}
		e.pad(8)
		e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(f))
	case 's', 'o':
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%T for a string, want string", v)
		}
		e.u32(uint32(len(s)))
		e.b = append(append(e.b, s...), 0)
	case 'g':
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%T for a signature, want string", v)
		}
		if _, err := splitTypes(s); err != nil || len(s) > 255 {
			return fmt.Errorf("signature value %q: not a valid signature of at most 255 bytes (%v)", s, err)
		}
		e.b = append(append(append(e.b, byte(len(s))), s...), 0)
	case 'v':
		vv, ok := v.(Variant)
		if !ok {
			return fmt.Errorf("%T for a variant, want dbustest.Variant", v)
		}
		if ts, err := splitTypes(vv.Signature); err != nil || len(ts) != 1 {
			return fmt.Errorf("variant of signature %q: want one complete type (%v)", vv.Signature, err)
		}
		e.b = append(append(append(e.b, byte(len(vv.Signature))), vv.Signature...), 0)
		return e.value(vv.Signature, vv.Value)
	case 'a':
		elems, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%T for an array, want []any", v)
		}
		elem := t[1:]
		e.u32(0)
		at := len(e.b) - 4
		e.pad(alignOf(elem[0]))
		start := len(e.b)
		for i, x := range elems {
			if err := e.value(elem, x); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		binary.LittleEndian.PutUint32(e.b[at:], uint32(len(e.b)-start))
	case '(', '{':
		members, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%T for a struct or dict entry, want []any", v)
		}
		ts, err := splitTypes(t[1 : len(t)-1])
		if err != nil {
			return err
		}
		if len(ts) != len(members) {
			return fmt.Errorf("%s has %d members, given %d", t, len(ts), len(members))
		}
		e.pad(8)
		for i, m := range ts {
			if err := e.value(m, members[i]); err != nil {
				return fmt.Errorf("member %d: %w", i, err)
			}
		}
	default:
		return fmt.Errorf("type %q is none D-Bus knows", t)
	}
	return nil
}

// integer is v, any Go integer, as an int64 within [lo, hi].
func integer(v any, lo, hi int64) (int64, error) {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int8:
		n = int64(x)
	case int16:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case uint:
		if uint64(x) > math.MaxInt64 {
			return 0, fmt.Errorf("%d is out of range [%d, %d]", x, lo, hi)
		}
		n = int64(x)
	case uint8:
		n = int64(x)
	case uint16:
		n = int64(x)
	case uint32:
		n = int64(x)
	case uint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("%d is out of range [%d, %d]", x, lo, hi)
		}
		n = int64(x)
	default:
		return 0, fmt.Errorf("%T for an integer type, want a Go integer", v)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is out of range [%d, %d]", n, lo, hi)
	}
	return n, nil
}

// alignOf is the alignment of a type starting with c.
func alignOf(c byte) int {
	switch c {
	case 'n', 'q':
		return 2
	case 'b', 'i', 'u', 'h', 's', 'o', 'a':
		return 4
	case 'x', 't', 'd', '(', '{':
		return 8
	}
	return 1
}

// Types splits a signature into its complete types ("sa{sv}i": s,
// a{sv}, i).
func Types(sig string) ([]string, error) { return splitTypes(sig) }

// splitTypes splits a signature into its complete types.
func splitTypes(sig string) ([]string, error) {
	var out []string
	for i := 0; i < len(sig); {
		end, err := completeType(sig, i)
		if err != nil {
			return nil, fmt.Errorf("signature %q: %w", sig, err)
		}
		out = append(out, sig[i:end])
		i = end
	}
	return out, nil
}

// completeType returns the end of the complete type at sig[i]. Its
// recursion is bounded by the signature's length; it does not check the
// specification's bounds of nesting (Decode does).
func completeType(sig string, i int) (int, error) {
	if i >= len(sig) {
		return 0, errors.New("ends inside a type")
	}
	switch c := sig[i]; c {
	case 'y', 'b', 'n', 'q', 'i', 'u', 'x', 't', 'd', 'h', 's', 'o', 'g', 'v':
		return i + 1, nil
	case 'a':
		if i+1 < len(sig) && sig[i+1] == '{' {
			key, err := completeType(sig, i+2)
			if err != nil {
				return 0, err
			}
			if key != i+3 || sig[i+2] == 'v' {
				return 0, fmt.Errorf("a dict entry's key at %d is not a basic type", i+2)
			}
			val, err := completeType(sig, key)
			if err != nil {
				return 0, err
			}
			if val >= len(sig) || sig[val] != '}' {
				return 0, fmt.Errorf("a dict entry at %d does not end after its key and value", i+1)
			}
			return val + 1, nil
		}
		return completeType(sig, i+1)
	case '(':
		j := i + 1
		for j < len(sig) && sig[j] != ')' {
			end, err := completeType(sig, j)
			if err != nil {
				return 0, err
			}
			j = end
		}
		if j >= len(sig) || j == i+1 {
			return 0, fmt.Errorf("the struct at %d is empty or not closed", i)
		}
		return j + 1, nil
	default:
		return 0, fmt.Errorf("%q at %d is no type (a dict entry only in an array)", c, i)
	}
}

// decoder reads values from b at off, in byte order order.
type decoder struct {
	b     []byte
	off   int
	order binary.ByteOrder
}

var errShort = errors.New("value runs past the end of the message")

func (d *decoder) align(a int) error {
	n := (d.off + a - 1) &^ (a - 1)
	if n > len(d.b) {
		return errShort
	}
	d.off = n
	return nil
}

func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || d.off+n > len(d.b) {
		return nil, errShort
	}
	v := d.b[d.off : d.off+n]
	d.off += n
	return v, nil
}

func (d *decoder) u32() (uint32, error) {
	if err := d.align(4); err != nil {
		return 0, err
	}
	v, err := d.take(4)
	if err != nil {
		return 0, err
	}
	return d.order.Uint32(v), nil
}

// text reads n bytes and the NUL after them.
func (d *decoder) text(n int) (string, error) {
	v, err := d.take(n + 1)
	if err != nil {
		return "", err
	}
	if v[n] != 0 {
		return "", errors.New("a string not ended by NUL")
	}
	return string(v[:n]), nil
}

func (d *decoder) signature() (string, error) {
	n, err := d.take(1)
	if err != nil {
		return "", err
	}
	return d.text(int(n[0]))
}

// value reads one value of the complete type t.
func (d *decoder) value(t string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("containers nested over %d deep", maxDepth)
	}
	fixed := func(size int) ([]byte, error) {
		if err := d.align(size); err != nil {
			return nil, err
		}
		return d.take(size)
	}
	switch t[0] {
	case 'y':
		v, err := d.take(1)
		if err != nil {
			return nil, err
		}
		return v[0], nil
	case 'b':
		n, err := d.u32()
		if err != nil {
			return nil, err
		}
		if n > 1 {
			return nil, fmt.Errorf("boolean %d, neither 0 nor 1", n)
		}
		return n == 1, nil
	case 'n', 'q':
		v, err := fixed(2)
		if err != nil {
			return nil, err
		}
		if t[0] == 'n' {
			return int16(d.order.Uint16(v)), nil
		}
		return d.order.Uint16(v), nil
	case 'i':
		n, err := d.u32()
		return int32(n), err
	case 'u', 'h':
		return d.u32()
	case 'x', 't', 'd':
		v, err := fixed(8)
		if err != nil {
			return nil, err
		}
		u := d.order.Uint64(v)
		switch t[0] {
		case 'x':
			return int64(u), nil
		case 'd':
			return math.Float64frombits(u), nil
		}
		return u, nil
	case 's', 'o':
		n, err := d.u32()
		if err != nil {
			return nil, err
		}
		if n > maxMessage {
			return nil, fmt.Errorf("a string of %d bytes", n)
		}
		return d.text(int(n))
	case 'g':
		return d.signature()
	case 'v':
		sig, err := d.signature()
		if err != nil {
			return nil, err
		}
		if ts, err := splitTypes(sig); err != nil || len(ts) != 1 {
			return nil, fmt.Errorf("variant of signature %q: want one complete type (%v)", sig, err)
		}
		v, err := d.value(sig, depth+1)
		if err != nil {
			return nil, err
		}
		return Variant{sig, v}, nil
	case 'a':
		n, err := d.u32()
		if err != nil {
			return nil, err
		}
		elem := t[1:]
		if err := d.align(alignOf(elem[0])); err != nil {
			return nil, err
		}
		end := d.off + int(n)
		if n > maxMessage || end > len(d.b) {
			return nil, errShort
		}
		out := []any{}
		for d.off < end {
			v, err := d.value(elem, depth+1)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", len(out), err)
			}
			out = append(out, v)
		}
		if d.off != end {
			return nil, fmt.Errorf("an array's elements end at %d, its length says %d", d.off, end)
		}
		return out, nil
	case '(', '{':
		ts, err := splitTypes(t[1 : len(t)-1])
		if err != nil {
			return nil, err
		}
		if err := d.align(8); err != nil {
			return nil, err
		}
		out := make([]any, 0, len(ts))
		for _, m := range ts {
			v, err := d.value(m, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("type %q is none D-Bus knows", t)
}

// messageLen is the length of the whole message whose first 16 bytes
// are b.
func messageLen(b []byte) (int, error) {
	order, err := byteOrder(b[0])
	if err != nil {
		return 0, err
	}
	body, fields := order.Uint32(b[4:]), order.Uint32(b[12:])
	if body > maxMessage || fields > maxMessage {
		return 0, fmt.Errorf("a message of %d bytes of header fields and %d of body, over the %d one may have", fields, body, maxMessage)
	}
	n := (fixedLen+int(fields)+7)&^7 + int(body)
	if n > maxMessage {
		return 0, fmt.Errorf("a message of %d bytes, over the %d one may have", n, maxMessage)
	}
	return n, nil
}

func byteOrder(b byte) (binary.ByteOrder, error) {
	switch b {
	case 'l':
		return binary.LittleEndian, nil
	case 'B':
		return binary.BigEndian, nil
	}
	return nil, fmt.Errorf("endianness byte %q, neither 'l' nor 'B'", b)
}

// Decode reads one whole message (as messageLen measures it), without its
// descriptors.
func Decode(b []byte) (*Message, error) {
	if len(b) < fixedLen {
		return nil, fmt.Errorf("a message of %d bytes, shorter than the %d of a header", len(b), fixedLen)
	}
	n, err := messageLen(b)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, fmt.Errorf("a message of %d bytes whose header says %d", len(b), n)
	}
	order, _ := byteOrder(b[0])
	m := &Message{Type: b[1], Flags: b[2], Serial: order.Uint32(b[8:])}
	if b[3] != 1 {
		return nil, fmt.Errorf("protocol version %d, not 1", b[3])
	}
	d := decoder{b: b, off: 12, order: order}
	fv, err := d.value("a(yv)", 0)
	if err != nil {
		return nil, fmt.Errorf("header fields: %w", err)
	}
	for _, f := range fv.([]any) {
		kv := f.([]any)
		code, v := kv[0].(byte), kv[1].(Variant)
		s, _ := v.Value.(string)
		u, _ := v.Value.(uint32)
		switch code {
		case fieldPath:
			m.Path = s
		case fieldInterface:
			m.Interface = s
		case fieldMember:
			m.Member = s
		case fieldErrorName:
			m.ErrorName = s
		case fieldReplySerial:
			m.ReplySerial = u
		case fieldDestination:
			m.Destination = s
		case fieldSender:
			m.Sender = s
		case fieldSignature:
			m.Signature = s
		case fieldUnixFDs:
			m.UnixFDs = u
		}
	}
	if err := d.align(8); err != nil {
		return nil, fmt.Errorf("header fields: %w", err)
	}
	ts, err := splitTypes(m.Signature)
	if err != nil {
		return nil, fmt.Errorf("the body's %w", err)
	}
	body := decoder{b: b[d.off:], order: order}
	m.Body = make([]any, 0, len(ts))
	for i, t := range ts {
		v, err := body.value(t, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: argument %d (%s): %w", m.describe(), i, t, err)
		}
		m.Body = append(m.Body, v)
	}
	if body.off != len(body.b) {
		return nil, fmt.Errorf("%s: %d bytes of body past its signature %q", m.describe(), len(body.b)-body.off, m.Signature)
	}
	return m, nil
}
