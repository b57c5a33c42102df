// Package dbuswire holds the parts of the D-Bus wire format that the bus
// relay (package dbusproxy) and the tests' D-Bus client (package
// internal/dbustest) share: the message types, flags and header field
// codes, the specification's bounds, a message's length from its fixed
// header, signatures, a reader of values that checks them as the bus
// does, and the bus address that says where a bus listens (read by
// paddock's wall too, package supervisor). It exists so that the relay and
// the tests read the format by one copy of its rules, and so that those
// rules are tested once.
//
// What each reads a message into is its own: the relay's header and
// argument reader (dbusproxy), the tests' Message of Go values and their
// encoder (dbustest).
package dbuswire

import (
	"encoding/binary"
	"fmt"
)

// Message types: the second byte of every message.
const (
	TypeMethodCall   = 1
	TypeMethodReturn = 2
	TypeError        = 3
	TypeSignal       = 4
)

// FlagNoReplyExpected marks a call whose sender wants no reply: neither
// a return nor an error is sent to it.
const FlagNoReplyExpected = 0x1

// Header field codes: the byte that opens each header field.
const (
	FieldPath        = 1
	FieldInterface   = 2
	FieldMember      = 3
	FieldErrorName   = 4
	FieldReplySerial = 5
	FieldDestination = 6
	FieldSender      = 7
	FieldSignature   = 8
	FieldUnixFDs     = 9
)

// Bounds of the D-Bus specification. A reader checks each before it
// reads or allocates what a length claims.
const (
	// FixedLen is the length of a header's fixed part: endianness,
	// type, flags, version, body length, serial, header fields' length.
	FixedLen = 16
	// MaxMessage bounds a whole message: 128 MiB.
	MaxMessage = 1 << 27
	// MaxArray bounds one array's bytes (the header fields are one):
	// 64 MiB.
	MaxArray = 1 << 26
	// MaxSig bounds a signature's length.
	MaxSig = 255
	// MaxDepth bounds the nesting of arrays in arrays, and of structs
	// in structs, each; a value nests at most twice as deep (variants
	// included).
	MaxDepth = 32
)

// ByteOrder is the byte order a message's first byte, its endianness,
// names: 'l' little-endian, 'B' big-endian.
func ByteOrder(b byte) (binary.ByteOrder, error) {
	switch b {
	case 'l':
		return binary.LittleEndian, nil
	case 'B':
		return binary.BigEndian, nil
	}
	return nil, fmt.Errorf("endianness byte %q: want 'l' or 'B'", b)
}

// MessageLen is the length of the whole message whose fixed header is
// b[:FixedLen], checked against the specification's bounds (endianness,
// protocol version 1, 64 MiB of header fields, 128 MiB a message) before
// anything is read or allocated for it: a reader of a stream frames
// messages by it.
func MessageLen(b []byte) (int, error) {
	if len(b) < FixedLen {
		return 0, fmt.Errorf("message header: %d bytes, want %d", len(b), FixedLen)
	}
	order, err := ByteOrder(b[0])
	if err != nil {
		return 0, fmt.Errorf("message header: %w", err)
	}
	if b[3] != 1 {
		return 0, fmt.Errorf("message header: protocol version %d, want 1", b[3])
	}
	body, fields := uint64(order.Uint32(b[4:])), uint64(order.Uint32(b[12:]))
	if fields > MaxArray {
		return 0, fmt.Errorf("message header: header fields of %d bytes, more than the 64 MiB the specification allows", fields)
	}
	n := uint64(Align(int(FixedLen+fields), 8)) + body
	if n > MaxMessage {
		return 0, fmt.Errorf("message header: message of %d bytes, more than the 128 MiB the specification allows", n)
	}
	return int(n), nil
}

// Align is n rounded up to a multiple of a, a power of two: where a
// value aligned to a starts at or after offset n.
func Align(n, a int) int { return (n + a - 1) &^ (a - 1) }

// FixedSize is the size, and the alignment, of a fixed-size basic type
// by its type code; 0 for any other type.
func FixedSize(c byte) int {
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

// AlignOf is the alignment of a type by its first character; 0 for a
// character that starts no type.
func AlignOf(c byte) int {
	switch c {
	case 's', 'o', 'a':
		return 4
	case 'g', 'v':
		return 1
	case '(', '{':
		return 8
	}
	return FixedSize(c)
}
