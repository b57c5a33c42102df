package dbuswire

import (
	"errors"
	"fmt"
)

// NextType returns where the single complete type that starts at s[i]
// ends, checking it as the specification does: arrays and structs each
// nest at most MaxDepth deep, a dict entry is an array's element whose
// key is a basic type, and a struct has members.
func NextType(s string, i int) (int, error) { return nextType(s, i, 0, 0) }

// nextType is NextType within arrays arrays and structs structs.
func nextType(s string, i, arrays, structs int) (int, error) {
	if i >= len(s) {
		return 0, errors.New("ends inside a type")
	}
	switch c := s[i]; c {
	case 'y', 'b', 'n', 'q', 'i', 'u', 'x', 't', 'd', 'h', 's', 'o', 'g', 'v':
		return i + 1, nil
	case 'a':
		if arrays >= MaxDepth {
			return 0, errors.New("arrays nested more than 32 deep")
		}
		if i+1 < len(s) && s[i+1] == '{' {
			if structs >= MaxDepth {
				return 0, errors.New("structs nested more than 32 deep")
			}
			if i+2 >= len(s) || !basic(s[i+2]) {
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
		if structs >= MaxDepth {
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

// basic reports whether c is a basic type's code: a dict entry's key
// must be one.
func basic(c byte) bool {
	return FixedSize(c) != 0 || c == 's' || c == 'o' || c == 'g'
}

// ValidSignature checks a signature: a sequence of complete types, at
// most MaxSig bytes. Its error does not repeat the signature: the caller
// names it.
func ValidSignature(s string) error { return split(s, nil) }

// SingleType checks that s is exactly one complete type, as a variant's
// signature must be.
func SingleType(s string) error {
	if s == "" {
		return errors.New("empty, not one type")
	}
	j, err := NextType(s, 0)
	if err != nil {
		return err
	}
	if j != len(s) {
		return errors.New("more than one type")
	}
	return nil
}

// Types splits a valid signature into its complete types ("sa{sv}i": s,
// a{sv}, i); of an invalid one, the types before its first fault (none
// of one over MaxSig bytes).
func Types(sig string) []string {
	var ts []string
	split(sig, &ts)
	return ts
}

// SplitTypes splits a signature into its complete types, or says,
// naming the signature, why it is none.
func SplitTypes(sig string) ([]string, error) {
	var ts []string
	if err := split(sig, &ts); err != nil {
		return nil, fmt.Errorf("signature %q: %w", sig, err)
	}
	return ts, nil
}

// split checks sig and, where out is not nil, appends its complete
// types to *out, up to its first fault.
func split(sig string, out *[]string) error {
	if len(sig) > MaxSig {
		return errors.New("longer than 255 bytes")
	}
	for i := 0; i < len(sig); {
		j, err := NextType(sig, i)
		if err != nil {
			return err
		}
		if out != nil {
			*out = append(*out, sig[i:j])
		}
		i = j
	}
	return nil
}
