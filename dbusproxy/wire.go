package dbusproxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The D-Bus wire format, as much of it as the relay reads and writes: the
// fixed header, the header fields, and the values of any signature (to
// skip the header fields it does not know and to read the few arguments
// its rules look at). Everything here works on a whole message in memory.

// Message types.
const (
	typeMethodCall   = 1
	typeMethodReturn = 2
	typeError        = 3
	typeSignal       = 4
)

// flagNoReplyExpected: the caller wants no reply, so a refusal sends none.
const flagNoReplyExpected = 0x1

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

// fieldType is the one type each known header field may have.
var fieldType = [...]byte{
	fieldPath: 'o', fieldInterface: 's', fieldMember: 's', fieldErrorName: 's',
	fieldReplySerial: 'u', fieldDestination: 's', fieldSender: 's', fieldSignature: 'g', fieldUnixFDs: 'u',
}

// Bounds of the D-Bus specification, and the relay's own on descriptors.
const (
	fixedLen   = 16      // the fixed part of a header: endianness, type, flags, version, body length, serial, fields length
	maxMessage = 1 << 27 // 128 MiB, a whole message
	maxArray   = 1 << 26 // 64 MiB, one array (the header fields are one)
	maxSig     = 255     // a signature's length
	maxDepth   = 32      // arrays in arrays, and structs in structs, each
	// maxFDs bounds the descriptors one message may carry. The kernel
	// passes at most 253 in one sendmsg (SCM_MAX_FD), dbus-daemon's
	// default allows 16 (system bus) to 1024 (session bus) a message.
	maxFDs = 1024
)

// errShort: a value runs past the end of its message or array.
var errShort = errors.New("value runs past the end of its container")

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

// byteOrder reads the endianness byte.
func byteOrder(b byte) (binary.ByteOrder, error) {
	switch b {
	case 'l':
		return binary.LittleEndian, nil
	case 'B':
		return binary.BigEndian, nil
	}
	return nil, fmt.Errorf("endianness byte %q: want 'l' or 'B'", b)
}

func align(n, a int) int { return (n + a - 1) &^ (a - 1) }

// messageLen is the length of the whole message whose first 16 bytes are
// b, checked against the specification's bounds before anything is read
// or allocated for it.
func messageLen(b []byte) (int, error) {
	if len(b) < fixedLen {
		return 0, fmt.Errorf("message header: %d bytes, want %d", len(b), fixedLen)
	}
	order, err := byteOrder(b[0])
	if err != nil {
		return 0, fmt.Errorf("message header: %w", err)
	}
	if b[3] != 1 {
		return 0, fmt.Errorf("message header: protocol version %d, want 1", b[3])
	}
	body, fields := uint64(order.Uint32(b[4:])), uint64(order.Uint32(b[12:]))
	if fields > maxArray {
		return 0, fmt.Errorf("message header: header fields of %d bytes, more than the 64 MiB the specification allows", fields)
	}
	n := uint64(align(int(fixedLen+fields), 8)) + body
	if n > maxMessage {
		return 0, fmt.Errorf("message header: message of %d bytes, more than the 128 MiB the specification allows", n)
	}
	return int(n), nil
}

// parseHeader reads the header of the whole message msg. It refuses what
// dbus-daemon and dbus-broker refuse and what would let the relay read a
// message differently from the bus: a wrong length, a known field of the
// wrong type or given twice, a field a message type requires missing, a
// string with a NUL in it or one that is not UTF-8.
func parseHeader(msg []byte) (header, error) {
	var h header
	n, err := messageLen(msg)
	if err != nil {
		return h, err
	}
	if n != len(msg) {
		return h, fmt.Errorf("message header: says %d bytes, the message has %d", n, len(msg))
	}
	h.order, _ = byteOrder(msg[0])
	h.typ, h.flags = msg[1], msg[2]
	h.serial = h.order.Uint32(msg[8:])
	if h.serial == 0 {
		return h, errors.New("message header: serial 0")
	}
	end := fixedLen + int(h.order.Uint32(msg[12:]))
	h.bodyOff = align(end, 8)
	d := decoder{b: msg[:end], order: h.order, off: fixedLen}
	var seen [len(fieldType)]bool
	for d.off < end {
		if err := d.align(8); err != nil {
			return h, fmt.Errorf("header field at byte %d: %w", d.off, err)
		}
		at := d.off
		code, err := d.u8()
		if err != nil {
			return h, fmt.Errorf("header field at byte %d: %w", at, err)
		}
		sig, err := d.signature()
		if err != nil {
			return h, fmt.Errorf("header field %d at byte %d: its type: %w", code, at, err)
		}
		if code == 0 {
			return h, fmt.Errorf("header field at byte %d: code 0 is invalid", at)
		}
		if int(code) >= len(fieldType) {
			// An unknown field: the specification says to skip it.
			if err := singleType(sig); err != nil {
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
		case fieldReplySerial, fieldUnixFDs:
			v, err := d.u32()
			if err != nil {
				return h, fmt.Errorf("header field %d at byte %d: %w", code, at, err)
			}
			if code == fieldReplySerial {
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
		if code == fieldSignature {
			s, err = d.signature()
		} else {
			s, err = d.str()
		}
		if err != nil {
			return h, fmt.Errorf("header field %d at byte %d: %w", code, at, err)
		}
		if s == "" && code != fieldSignature {
			return h, fmt.Errorf("header field %d at byte %d: empty", code, at)
		}
		switch code {
		case fieldPath:
			h.path = s
		case fieldInterface:
			h.iface = s
		case fieldMember:
			h.member = s
		case fieldErrorName:
			h.errorName = s
		case fieldDestination:
			h.dest = s
		case fieldSender:
			h.sender = s
		case fieldSignature:
			h.sig = s
		}
	}
	if h.unixFDs > maxFDs {
		return h, fmt.Errorf("message header: %d unix fds, more than the relay's %d", h.unixFDs, maxFDs)
	}
	var need []byte
	switch h.typ {
	case typeMethodCall:
		need = []byte{fieldPath, fieldMember}
	case typeMethodReturn:
		need = []byte{fieldReplySerial}
	case typeError:
		need = []byte{fieldErrorName, fieldReplySerial}
	case typeSignal:
		need = []byte{fieldPath, fieldInterface, fieldMember}
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

// decoder reads values from b, aligned from b's start (a message's start:
// the body starts 8-aligned, so its alignment is the message's).
type decoder struct {
	b     []byte
	order binary.ByteOrder
	off   int
}

func (d *decoder) align(a int) error {
	p := align(d.off, a)
	if p > len(d.b) {
		return errShort
	}
	d.off = p
	return nil
}

func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || n > len(d.b)-d.off {
		return nil, errShort
	}
	v := d.b[d.off : d.off+n]
	d.off += n
	return v, nil
}

func (d *decoder) u8() (byte, error) {
	v, err := d.take(1)
	if err != nil {
		return 0, err
	}
	return v[0], nil
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

// text checks the bytes of a string and its NUL terminator.
func text(v []byte, nul byte) (string, error) {
	if nul != 0 {
		return "", errors.New("string without its NUL terminator")
	}
	for i, c := range v {
		if c == 0 {
			return "", fmt.Errorf("string with a NUL at byte %d", i)
		}
	}
	if !utf8.Valid(v) {
		return "", errors.New("string that is not UTF-8")
	}
	return string(v), nil
}

// str reads a STRING or OBJECT_PATH.
func (d *decoder) str() (string, error) {
	n, err := d.u32()
	if err != nil {
		return "", err
	}
	if n > maxMessage {
		return "", errShort
	}
	v, err := d.take(int(n) + 1)
	if err != nil {
		return "", err
	}
	return text(v[:n], v[n])
}

// signature reads a SIGNATURE and checks it is one.
func (d *decoder) signature() (string, error) {
	n, err := d.u8()
	if err != nil {
		return "", err
	}
	v, err := d.take(int(n) + 1)
	if err != nil {
		return "", err
	}
	s, err := text(v[:n], v[n])
	if err != nil {
		return "", err
	}
	if err := validSignature(s); err != nil {
		return "", fmt.Errorf("signature %q: %w", s, err)
	}
	return s, nil
}

// fixedSize is the size (and alignment) of the fixed-size basic types.
func fixedSize(c byte) int {
	switch c {
	case 'y':
		return 1
	case 'n', 'q':
		return 2
	case 'b', 'i', 'u', 'h':
		return 4
	case 'x', 't', 'd':
		return 8
	}
	return 0
}

// alignOf is the alignment of a type by its first character.
func alignOf(c byte) int {
	switch c {
	case 's', 'o', 'a':
		return 4
	case 'g', 'v':
		return 1
	case '(', '{':
		return 8
	}
	return fixedSize(c)
}

// nextType returns where the single complete type starting at s[i] ends,
// checking it: arrays and structs each nest at most 32 deep, a dict entry
// is an array's element whose key is a basic type, and a struct has
// members.
func nextType(s string, i, arrays, structs int) (int, error) {
	if i >= len(s) {
		return 0, errors.New("ends inside a type")
	}
	switch c := s[i]; c {
	case 'y', 'b', 'n', 'q', 'i', 'u', 'x', 't', 'd', 'h', 's', 'o', 'g', 'v':
		return i + 1, nil
	case 'a':
		if arrays >= maxDepth {
			return 0, errors.New("arrays nested more than 32 deep")
		}
		if i+1 < len(s) && s[i+1] == '{' {
			if structs >= maxDepth {
				return 0, errors.New("structs nested more than 32 deep")
			}
			if i+2 >= len(s) || (fixedSize(s[i+2]) == 0 && !strings.ContainsRune("sog", rune(s[i+2]))) {
				return 0, errors.New("a dict entry whose key is not a basic type")
			}
			j, err := nextType(s, i+3, arrays+1, structs+1)
			if err != nil {
				return 0, err
			}
			if j >= len(s) || s[j] != '}' {
				return 0, errors.New("a dict entry without exactly a key and a value")
			}
			return j + 1, nil
		}
		return nextType(s, i+1, arrays+1, structs)
	case '(':
		if structs >= maxDepth {
			return 0, errors.New("structs nested more than 32 deep")
		}
		j := i + 1
		if j < len(s) && s[j] == ')' {
			return 0, errors.New("an empty struct")
		}
		for j < len(s) && s[j] != ')' {
			var err error
			if j, err = nextType(s, j, arrays, structs+1); err != nil {
				return 0, err
			}
		}
		if j >= len(s) {
			return 0, errors.New("a struct without its ')'")
		}
		return j + 1, nil
	default:
		return 0, fmt.Errorf("type code %q at %d", c, i)
	}
}

// validSignature checks a signature: a sequence of complete types, 255
// bytes at most.
func validSignature(s string) error {
	if len(s) > maxSig {
		return errors.New("longer than 255 bytes")
	}
	for i := 0; i < len(s); {
		j, err := nextType(s, i, 0, 0)
		if err != nil {
			return err
		}
		i = j
	}
	return nil
}

// singleType checks that s is exactly one complete type (a variant's
// signature).
func singleType(s string) error {
	if s == "" {
		return errors.New("empty, not one type")
	}
	j, err := nextType(s, 0, 0, 0)
	if err != nil {
		return err
	}
	if j != len(s) {
		return errors.New("more than one type")
	}
	return nil
}

// types splits a valid signature into its complete types.
func types(sig string) []string {
	var out []string
	for i := 0; i < len(sig); {
		j, err := nextType(sig, i, 0, 0)
		if err != nil {
			return out
		}
		out = append(out, sig[i:j])
		i = j
	}
	return out
}

// skip passes over one value of the complete type t. depth counts the
// containers and variants it is in: values nest at most 64 deep, as in
// libdbus (a variant's signature restarts the signature's own count).
func (d *decoder) skip(t string, depth int) error {
	if depth > 2*maxDepth {
		return errors.New("values nested more than 64 deep")
	}
	c := t[0]
	if n := fixedSize(c); n != 0 {
		if err := d.align(n); err != nil {
			return err
		}
		_, err := d.take(n)
		return err
	}
	switch c {
	case 's', 'o':
		_, err := d.str()
		return err
	case 'g':
		_, err := d.signature()
		return err
	case 'v':
		s, err := d.signature()
		if err != nil {
			return err
		}
		if err := singleType(s); err != nil {
			return fmt.Errorf("variant of type %q: %w", s, err)
		}
		return d.skip(s, depth+1)
	case 'a':
		n, err := d.u32()
		if err != nil {
			return err
		}
		if n > maxArray {
			return fmt.Errorf("array of %d bytes, more than the 64 MiB the specification allows", n)
		}
		elem := t[1:]
		if err := d.align(alignOf(elem[0])); err != nil {
			return err
		}
		if int(n) > len(d.b)-d.off {
			return errShort
		}
		end := d.off + int(n)
		if size := fixedSize(elem[0]); size != 0 {
			if int(n)%size != 0 {
				return fmt.Errorf("array of %d bytes of %d-byte elements", n, size)
			}
			d.off = end
			return nil
		}
		outer := d.b
		d.b = d.b[:end]
		defer func() { d.b = outer }()
		for d.off < end {
			if err := d.skip(elem, depth+1); err != nil {
				return err
			}
		}
		return nil
	case '(', '{':
		if err := d.align(8); err != nil {
			return err
		}
		for _, m := range types(t[1 : len(t)-1]) {
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
	return &body{d: decoder{b: msg, order: h.order, off: h.bodyOff}, types: types(h.sig)}
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
	s, err := b.d.str()
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
		s, err := d.str()
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
		v, err := d.u32()
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
	n, err := d.u32()
	if err != nil {
		return err
	}
	if n > maxArray {
		return fmt.Errorf("array of %d bytes, more than the 64 MiB the specification allows", n)
	}
	if err := d.align(elems); err != nil {
		return err
	}
	if int(n) > len(d.b)-d.off {
		return errShort
	}
	end := d.off + int(n)
	outer := d.b
	d.b = d.b[:end]
	defer func() { d.b = outer }()
	for d.off < end {
		if err := elem(d); err != nil {
			return err
		}
	}
	return nil
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
	binary.LittleEndian.PutUint32(e.b[12:], uint32(len(e.b)-fixedLen))
	e.pad(8)
	return append(e.b, body...)
}
