package dbusproxy

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/paddock-dev/paddock/internal/dbuswire"
)

// The D-Bus wire format as the relay reads and writes it: a message's
// header and header fields, the values of any signature (to skip the
// header fields it does not know and to read the few arguments its rules
// look at), and its own error replies. Everything here works on a whole
// message in memory; the format's shared parts (constants, bounds,
// signatures, the checked reading of basic values) are package dbuswire's.

// fieldType is the one type each known header field may have.
var fieldType = [...]byte{
	dbuswire.FieldPath: 'o', dbuswire.FieldInterface: 's', dbuswire.FieldMember: 's', dbuswire.FieldErrorName: 's',
	dbuswire.FieldReplySerial: 'u', dbuswire.FieldDestination: 's', dbuswire.FieldSender: 's', dbuswire.FieldSignature: 'g',
	dbuswire.FieldUnixFDs: 'u',
}

// maxFDs bounds the descriptors one message may carry, the relay's own
// bound. The kernel passes at most 253 in one sendmsg (SCM_MAX_FD),
// dbus-daemon's default allows 16 (system bus) to 1024 (session bus) a
// message.
const maxFDs = 1024

// header is what the relay knows of a message: its fixed header and its
// header fields. Absent fields are empty (a REPLY_SERIAL or UNIX_FDS of 0
// is absent: 0 is no valid serial, and 0 descriptors is the default).
type header struct {
	order       binary.ByteOrder
	typ, flags  byte
	serial      uint32
	path        string
	iface       string
	member      string
	errorName   string
	replySerial uint32
	dest        string
	sender      string
	sig         string
	unixFDs     uint32
	bodyOff     int // where the body starts in the message
}

// parseHeader reads the header of the whole message msg. It refuses what
// dbus-daemon and dbus-broker refuse and what would let the relay read a
// message differently from the bus: a wrong length, a known field of the
// wrong type or given twice, a field a message type requires missing, a
// string with a NUL in it or one that is not UTF-8.
func parseHeader(msg []byte) (header, error) {
	var h header
	n, err := dbuswire.MessageLen(msg)
	if err != nil {
		return h, err
	}
	if n != len(msg) {
		return h, fmt.Errorf("message header: says %d bytes, the message has %d", n, len(msg))
	}
	h.order, _ = dbuswire.ByteOrder(msg[0])
	h.typ, h.flags = msg[1], msg[2]
	h.serial = h.order.Uint32(msg[8:])
	if h.serial == 0 {
		return h, errors.New("message header: serial 0")
	}
	end := dbuswire.FixedLen + int(h.order.Uint32(msg[12:]))
	h.bodyOff = dbuswire.Align(end, 8)
	d := decoder{dbuswire.Decoder{B: msg[:end], Order: h.order, Off: dbuswire.FixedLen}}
	var seen [len(fieldType)]bool
	for d.Off < end {
		if err := d.Align(8); err != nil {
			return h, fmt.Errorf("header field at byte %d: %w", d.Off, err)
		}
		at := d.Off
		code, err := d.U8()
		if err != nil {
			return h, fmt.Errorf("header field at byte %d: %w", at, err)
		}
		sig, err := d.Signature()
		if err != nil {
			return h, fmt.Errorf("header field %d at byte %d: its type: %w", code, at, err)
		}
		if code == 0 {
			return h, fmt.Errorf("header field at byte %d: code 0 is invalid", at)
		}
		if int(code) >= len(fieldType) {
			// An unknown field: the specification says to skip it.
			if err := dbuswire.SingleType(sig); err != nil {
				return h, fmt.Errorf("header field %d at byte %d: type %q: %w", code, at, sig, err)
			}
			if err := d.skip(sig, 0); err != nil {
				return h, fmt.Errorf("header field %d at byte %d: %w", code, at, err)
			}
			continue
		}
		if seen[code] {
			return h, fmt.Errorf("header field %d at byte %d: given twice", code, at)
		}
		seen[code] = true
		if len(sig) != 1 || sig[0] != fieldType[code] {
			return h, fmt.Errorf("header field %d at byte %d: type %q, want %q", code, at, sig, fieldType[code])
		}
		switch code {
		case dbuswire.FieldReplySerial, dbuswire.FieldUnixFDs:
			v, err := d.U32()
			if err != nil {
				return h, fmt.Errorf("header field %d at byte %d: %w", code, at, err)
			}
			if code == dbuswire.FieldReplySerial {
				if v == 0 {
					return h, fmt.Errorf("header field REPLY_SERIAL at byte %d: 0", at)
				}
				h.replySerial = v
			} else {
				h.unixFDs = v
			}
			continue
		}
		var s string
		if code == dbuswire.FieldSignature {
			s, err = d.Signature()
		} else {
			s, err = d.Str()
		}
		if err != nil {
			return h, fmt.Errorf("header field %d at byte %d: %w", code, at, err)
		}
		if s == "" && code != dbuswire.FieldSignature {
			return h, fmt.Errorf("header field %d at byte %d: empty", code, at)
		}
		switch code {
		case dbuswire.FieldPath:
			h.path = s
		case dbuswire.FieldInterface:
			h.iface = s
		case dbuswire.FieldMember:
			h.member = s
		case dbuswire.FieldErrorName:
			h.errorName = s
		case dbuswire.FieldDestination:
			h.dest = s
		case dbuswire.FieldSender:
			h.sender = s
		case dbuswire.FieldSignature:
			h.sig = s
		}
	}
	if h.unixFDs > maxFDs {
		return h, fmt.Errorf("message header: %d unix fds, more than the relay's %d", h.unixFDs, maxFDs)
	}
	var need []byte
	switch h.typ {
	case dbuswire.TypeMethodCall:
		need = []byte{dbuswire.FieldPath, dbuswire.FieldMember}
	case dbuswire.TypeMethodReturn:
		need = []byte{dbuswire.FieldReplySerial}
	case dbuswire.TypeError:
		need = []byte{dbuswire.FieldErrorName, dbuswire.FieldReplySerial}
	case dbuswire.TypeSignal:
		need = []byte{dbuswire.FieldPath, dbuswire.FieldInterface, dbuswire.FieldMember}
	case 0:
		return h, errors.New("message header: message type 0 is invalid")
	}
	for _, f := range need {
		if !seen[f] {
			return h, fmt.Errorf("message header: a message of type %d without header field %d", h.typ, f)
		}
	}
	return h, nil
}

// decoder is dbuswire's, with the relay's own readers: skip passes over
// a value of any type, array reads an array element by element.
type decoder struct{ dbuswire.Decoder }

// skip passes over one value of the complete type t. depth counts the
// containers and variants it is in: values nest at most 64 deep, as in
// libdbus (a variant's signature restarts the signature's own count).
func (d *decoder) skip(t string, depth int) error {
	if depth > 2*dbuswire.MaxDepth {
		return errors.New("values nested more than 64 deep")
	}
	c := t[0]
	if n := dbuswire.FixedSize(c); n != 0 {
		if err := d.Align(n); err != nil {
			return err
		}
		_, err := d.Take(n)
		return err
	}
	switch c {
	case 's', 'o':
		_, err := d.Str()
		return err
	case 'g':
		_, err := d.Signature()
		return err
	case 'v':
		s, err := d.Signature()
		if err != nil {
			return err
		}
		if err := dbuswire.SingleType(s); err != nil {
			return fmt.Errorf("variant of type %q: %w", s, err)
		}
		return d.skip(s, depth+1)
	case 'a':
		elem := t[1:]
		end, err := d.Array(dbuswire.AlignOf(elem[0]))
		if err != nil {
			return err
		}
		if size := dbuswire.FixedSize(elem[0]); size != 0 {
			if n := end - d.Off; n%size != 0 {
				return fmt.Errorf("array of %d bytes of %d-byte elements", n, size)
			}
			d.Off = end
			return nil
		}
		return d.Elements(end, func() error { return d.skip(elem, depth+1) })
	case '(', '{':
		if err := d.Align(8); err != nil {
			return err
		}
		for _, m := range dbuswire.Types(t[1 : len(t)-1]) {
			if err := d.skip(m, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("type code %q", c)
}

// body reads a message's arguments in order.
type body struct {
	d     decoder
	types []string
	next  int
}

// newBody starts reading the body of msg, whose header is h.
func newBody(h *header, msg []byte) *body {
	return &body{d: decoder{dbuswire.Decoder{B: msg, Order: h.order, Off: h.bodyOff}}, types: dbuswire.Types(h.sig)}
}

// arg moves to argument i (counted from 0, at or after the current one)
// and returns its type.
func (b *body) arg(i int) (string, error) {
	if i < b.next {
		return "", fmt.Errorf("argument %d read after argument %d", i, b.next)
	}
	for ; b.next < i; b.next++ {
		if b.next >= len(b.types) {
			return "", fmt.Errorf("argument %d: the signature has %d", i, len(b.types))
		}
		if err := b.d.skip(b.types[b.next], 0); err != nil {
			return "", fmt.Errorf("argument %d: %w", b.next, err)
		}
	}
	if i >= len(b.types) {
		return "", fmt.Errorf("argument %d: the signature has %d", i, len(b.types))
	}
	return b.types[i], nil
}

// str returns string argument i.
func (b *body) str(i int) (string, error) {
	t, err := b.arg(i)
	if err != nil {
		return "", err
	}
	if t != "s" {
		return "", fmt.Errorf("argument %d is %q, not a string", i, t)
	}
	s, err := b.d.Str()
	if err != nil {
		return "", fmt.Errorf("argument %d: %w", i, err)
	}
	b.next++
	return s, nil
}

// strs returns argument i, an array of strings.
func (b *body) strs(i int) ([]string, error) {
	t, err := b.arg(i)
	if err != nil {
		return nil, err
	}
	if t != "as" {
		return nil, fmt.Errorf("argument %d is %q, not an array of strings", i, t)
	}
	var out []string
	err = b.d.array(4, func(d *decoder) error {
		s, err := d.Str()
		out = append(out, s)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("argument %d: %w", i, err)
	}
	b.next++
	return out, nil
}

// u32s returns argument i, an array of uint32 ("au") or of unix fd
// indexes ("ah"): want says which.
func (b *body) u32s(i int, want string) ([]uint32, error) {
	t, err := b.arg(i)
	if err != nil {
		return nil, err
	}
	if t != want {
		return nil, fmt.Errorf("argument %d is %q, not %q", i, t, want)
	}
	var out []uint32
	err = b.d.array(4, func(d *decoder) error {
		v, err := d.U32()
		out = append(out, v)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("argument %d: %w", i, err)
	}
	b.next++
	return out, nil
}

// array reads an array's length and calls elem for each element until its
// end; elem must read exactly one element. elems is the elements'
// alignment: the padding to it after the length is not the array's.
func (d *decoder) array(elems int, elem func(*decoder) error) error {
	end, err := d.Array(elems)
	if err != nil {
		return err
	}
	return d.Elements(end, func() error { return elem(d) })
}

// encoder writes values, little-endian, aligned from the start of b.
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

func (e *encoder) str(s string) {
	e.u32(uint32(len(s)))
	e.b = append(append(e.b, s...), 0)
}

func (e *encoder) signature(s string) {
	e.b = append(append(append(e.b, byte(len(s))), s...), 0)
}

// field is one header field to encode: a string, object path or
// signature (typ 's', 'o', 'g' with s) or a uint32 (typ 'u' with u).
type field struct {
	code byte
	typ  byte
	s    string
	u    uint32
}

// encodeMessage builds a whole little-endian message. body holds the
// arguments, encoded from offset 0 (the body starts 8-aligned).
func encodeMessage(typ, flags byte, serial uint32, fields []field, body []byte) []byte {
	e := encoder{b: make([]byte, 0, 128+len(body))}
	e.b = append(e.b, 'l', typ, flags, 1)
	e.u32(uint32(len(body)))
	e.u32(serial)
	e.u32(0) // the fields' length, set below
	for _, f := range fields {
		e.pad(8)
		e.b = append(e.b, f.code)
		e.signature(string(f.typ))
		switch f.typ {
		case 'u':
			e.u32(f.u)
		case 'g':
			e.signature(f.s)
		default:
			e.str(f.s)
		}
	}
	binary.LittleEndian.PutUint32(e.b[12:], uint32(len(e.b)-dbuswire.FixedLen))
	e.pad(8)
	return append(e.b, body...)
}
