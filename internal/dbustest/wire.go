package dbustest

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/paddock-dev/paddock/internal/dbuswire"
)

// Message types (the second byte of every message), for Message.Type.
const (
	TypeMethodCall   = dbuswire.TypeMethodCall
	TypeMethodReturn = dbuswire.TypeMethodReturn
	TypeError        = dbuswire.TypeError
	TypeSignal       = dbuswire.TypeSignal
)

// FlagNoReplyExpected marks a call whose sender wants no reply.
const FlagNoReplyExpected = dbuswire.FlagNoReplyExpected

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
	str(dbuswire.FieldPath, "o", m.Path)
	str(dbuswire.FieldInterface, "s", m.Interface)
	str(dbuswire.FieldMember, "s", m.Member)
	str(dbuswire.FieldErrorName, "s", m.ErrorName)
	u32(dbuswire.FieldReplySerial, m.ReplySerial)
	str(dbuswire.FieldDestination, "s", m.Destination)
	str(dbuswire.FieldSender, "s", m.Sender)
	str(dbuswire.FieldSignature, "g", m.Signature)
	fds := m.UnixFDs
	if fds == 0 {
		fds = uint32(len(m.FDs))
	}
	u32(dbuswire.FieldUnixFDs, fds)
	if len(body) > dbuswire.MaxMessage {
		return nil, fmt.Errorf("encode %s: a body of %d bytes, over the %d a message may have", m.describe(), len(body), dbuswire.MaxMessage)
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
	ts, err := dbuswire.SplitTypes(sig)
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
// header field of its own). Its type must be valid, but it nests values
// (variants in variants) as deep as v does, past the specification's
// bound, so that a parser's refusal of them can be tested.
func AppendValue(b []byte, t string, v any) ([]byte, error) {
	if err := dbuswire.SingleType(t); err != nil {
		return nil, fmt.Errorf("type %q: want one complete type: %w", t, err)
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
		if err := dbuswire.ValidSignature(s); err != nil {
			return fmt.Errorf("signature value %q: %w", s, err)
		}
		e.b = append(append(append(e.b, byte(len(s))), s...), 0)
	case 'v':
		vv, ok := v.(Variant)
		if !ok {
			return fmt.Errorf("%T for a variant, want dbustest.Variant", v)
		}
		if err := dbuswire.SingleType(vv.Signature); err != nil {
			return fmt.Errorf("variant of signature %q: want one complete type: %w", vv.Signature, err)
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
		e.pad(dbuswire.AlignOf(elem[0]))
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
		ts := dbuswire.Types(t[1 : len(t)-1])
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

// Types splits a signature into its complete types ("sa{sv}i": s,
// a{sv}, i), or says why it is none.
func Types(sig string) ([]string, error) { return dbuswire.SplitTypes(sig) }

// decoder is dbuswire's, with value, which builds Go values.
type decoder struct{ dbuswire.Decoder }

// value reads one value of the complete type t, nested in depth
// containers and variants: values nest at most 64 deep.
func (d *decoder) value(t string, depth int) (any, error) {
	if depth > 2*dbuswire.MaxDepth {
		return nil, fmt.Errorf("containers nested over %d deep", 2*dbuswire.MaxDepth)
	}
	fixed := func(size int) ([]byte, error) {
		if err := d.Align(size); err != nil {
			return nil, err
		}
		return d.Take(size)
	}
	switch t[0] {
	case 'y':
		return d.U8()
	case 'b':
		n, err := d.U32()
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
			return int16(d.Order.Uint16(v)), nil
		}
		return d.Order.Uint16(v), nil
	case 'i':
		n, err := d.U32()
		return int32(n), err
	case 'u', 'h':
		return d.U32()
	case 'x', 't', 'd':
		v, err := fixed(8)
		if err != nil {
			return nil, err
		}
		u := d.Order.Uint64(v)
		switch t[0] {
		case 'x':
			return int64(u), nil
		case 'd':
			return math.Float64frombits(u), nil
		}
		return u, nil
	case 's', 'o':
		return d.Str()
	case 'g':
		return d.Signature()
	case 'v':
		sig, err := d.Signature()
		if err != nil {
			return nil, err
		}
		if err := dbuswire.SingleType(sig); err != nil {
			return nil, fmt.Errorf("variant of signature %q: want one complete type: %w", sig, err)
		}
		v, err := d.value(sig, depth+1)
		if err != nil {
			return nil, err
		}
		return Variant{sig, v}, nil
	case 'a':
		elem := t[1:]
		end, err := d.Array(dbuswire.AlignOf(elem[0]))
		if err != nil {
			return nil, err
		}
		out := []any{}
		err = d.Elements(end, func() error {
			v, err := d.value(elem, depth+1)
			if err != nil {
				return fmt.Errorf("element %d: %w", len(out), err)
			}
			out = append(out, v)
			return nil
		})
		if err != nil {
			return nil, err
		}
		return out, nil
	case '(', '{':
		if err := d.Align(8); err != nil {
			return nil, err
		}
		ts := dbuswire.Types(t[1 : len(t)-1])
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

// Decode reads one whole message (as dbuswire.MessageLen measures it),
// without its descriptors.
func Decode(b []byte) (*Message, error) {
	n, err := dbuswire.MessageLen(b)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, fmt.Errorf("a message of %d bytes whose header says %d", len(b), n)
	}
	order, _ := dbuswire.ByteOrder(b[0])
	m := &Message{Type: b[1], Flags: b[2], Serial: order.Uint32(b[8:])}
	d := decoder{dbuswire.Decoder{B: b, Order: order, Off: 12}}
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
		case dbuswire.FieldPath:
			m.Path = s
		case dbuswire.FieldInterface:
			m.Interface = s
		case dbuswire.FieldMember:
			m.Member = s
		case dbuswire.FieldErrorName:
			m.ErrorName = s
		case dbuswire.FieldReplySerial:
			m.ReplySerial = u
		case dbuswire.FieldDestination:
			m.Destination = s
		case dbuswire.FieldSender:
			m.Sender = s
		case dbuswire.FieldSignature:
			m.Signature = s
		case dbuswire.FieldUnixFDs:
			m.UnixFDs = u
		}
	}
	if err := d.Align(8); err != nil {
		return nil, fmt.Errorf("header fields: %w", err)
	}
	ts, err := dbuswire.SplitTypes(m.Signature)
	if err != nil {
		return nil, fmt.Errorf("the body's %w", err)
	}
	body := decoder{dbuswire.Decoder{B: b[d.Off:], Order: order}}
	m.Body = make([]any, 0, len(ts))
	for i, t := range ts {
		v, err := body.value(t, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: argument %d (%s): %w", m.describe(), i, t, err)
		}
		m.Body = append(m.Body, v)
	}
	if body.Off != len(body.B) {
		return nil, fmt.Errorf("%s: %d bytes of body past its signature %q", m.describe(), len(body.B)-body.Off, m.Signature)
	}
	return m, nil
}
