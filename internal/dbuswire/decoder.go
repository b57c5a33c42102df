package dbuswire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrShort is the error of a value that runs past the end of its
// message or array.
var ErrShort = errors.New("value runs past the end of its container")

// Decoder reads values from B at Off, in byte order Order, aligned from
// B's start: B starts where a message starts, or where its body does
// (8-aligned, so the alignment is the message's). It checks what it reads
// as the bus does, so that a reader of it never reads a message otherwise
// than the bus: each length against what is left and the specification's
// bounds, each string for a NUL terminator, no NUL inside, and UTF-8,
// each signature for valid types. Packages embed it to add the readers of
// their own (skipping a value, building a Go value).
type Decoder struct {
	B     []byte
	Order binary.ByteOrder
	Off   int
}

// Align moves Off to the next multiple of a.
func (d *Decoder) Align(a int) error {
	p := Align(d.Off, a)
	if p > len(d.B) {
		return ErrShort
	}
	d.Off = p
	return nil
}

// Take returns the next n bytes (aliasing B) and moves past them.
func (d *Decoder) Take(n int) ([]byte, error) {
	if n < 0 || n > len(d.B)-d.Off {
		return nil, ErrShort
	}
	v := d.B[d.Off : d.Off+n]
	d.Off += n
	return v, nil
}

// U8 reads a BYTE.
func (d *Decoder) U8() (byte, error) {
	v, err := d.Take(1)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// U32 reads a UINT32 (and so the length of a STRING or an ARRAY, a
// BOOLEAN's or UNIX_FD's bits).
func (d *Decoder) U32() (uint32, error) {
	if err := d.Align(4); err != nil {
		return 0, err
	}
	v, err := d.Take(4)
	if err != nil {
		return 0, err
	}
	return d.Order.Uint32(v), nil
}

// Str reads a STRING or an OBJECT_PATH (whose syntax it does not check).
func (d *Decoder) Str() (string, error) {
	n, err := d.U32()
	if err != nil {
		return "", err
	}
	if n > MaxMessage {
		return "", ErrShort
	}
	v, err := d.Take(int(n) + 1)
	if err != nil {
		return "", err
	}
	return text(v[:n], v[n])
}

// Signature reads a SIGNATURE and checks that it is one.
func (d *Decoder) Signature() (string, error) {
	n, err := d.U8()
	if err != nil {
		return "", err
	}
	v, err := d.Take(int(n) + 1)
	if err != nil {
		return "", err
	}
	s, err := text(v[:n], v[n])
	if err != nil {
		return "", err
	}
	if err := ValidSignature(s); err != nil {
		return "", fmt.Errorf("signature %q: %w", s, err)
	}
	return s, nil
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

// Array reads an ARRAY's length and the padding to its elements, whose
// alignment is elemAlign, checks the length against the specification's
// bound and what is left, and returns the offset where the elements end.
// Off is then at the first element.
func (d *Decoder) Array(elemAlign int) (end int, err error) {
	n, err := d.U32()
	if err != nil {
		return 0, err
	}
	if n > MaxArray {
		return 0, fmt.Errorf("array of %d bytes, more than the 64 MiB the specification allows", n)
	}
	if err := d.Align(elemAlign); err != nil {
		return 0, err
	}
	if int(n) > len(d.B)-d.Off {
		return 0, ErrShort
	}
	return d.Off + int(n), nil
}

// Elements calls elem, which reads one element, until the elements that
// end at end (as Array returned it) are read. While it runs B ends at
// end: an element that runs past the array's end is ErrShort.
func (d *Decoder) Elements(end int, elem func() error) error {
	outer := d.B
	d.B = d.B[:end]
	defer func() { d.B = outer }()
	for d.Off < end {
		if err := elem(); err != nil {
			return err
		}
	}
	return nil
}
