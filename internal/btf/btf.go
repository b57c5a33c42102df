// Package btf finds named types in the kernel's BPF Type Format data
// (/sys/kernel/btf/vmlinux): the BTF id a BPF program attached to a kernel
// function must name. It reads the format (linux/btf.h, Documentation/bpf/
// btf.rst) far enough to walk the type section and nothing more; loading
// and verifying programs is the kernel's.
package btf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// VmlinuxPath is where the kernel exposes its own BTF
// (CONFIG_DEBUG_INFO_BTF).
const VmlinuxPath = "/sys/kernel/btf/vmlinux"

// ErrNotFound: the BTF holds no type of that kind and name.
var ErrNotFound = errors.New("not found")

// Kinds of BTF types (BTF_KIND_*).
const (
	kindInt = iota + 1
	kindPtr
	kindArray
	kindStruct
	kindUnion
	kindEnum
	kindFwd
	kindTypedef
	kindVolatile
	kindConst
	kindRestrict
	kindFunc
	kindFuncProto
	kindVar
	kindDatasec
	kindFloat
	kindDeclTag
	kindTypeTag
	kindEnum64
)

const (
	magic   = 0xeb9f
	hdrSize = 24 // struct btf_header up to str_len
	typeLen = 12 // struct btf_type
)

// FuncID returns the BTF id of the function called name in the kernel's own
// BTF (VmlinuxPath).
func FuncID(name string) (uint32, error) {
	b, err := os.ReadFile(VmlinuxPath)
	if err != nil {
		return 0, fmt.Errorf("read kernel BTF: %w", err)
	}
	id, err := FindFunc(b, name)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", VmlinuxPath, err)
	}
	return id, nil
}

// FindFunc returns the id of the BTF_KIND_FUNC called name in raw, a BTF
// blob in this machine's byte order (what the kernel exposes).
func FindFunc(raw []byte, name string) (uint32, error) {
	if len(raw) < hdrSize {
		return 0, fmt.Errorf("BTF of %d bytes is shorter than its header", len(raw))
	}
	le := binary.LittleEndian
	var bo binary.ByteOrder = le
	if le.Uint16(raw) != magic {
		if binary.BigEndian.Uint16(raw) != magic {
			return 0, fmt.Errorf("no BTF magic (0x%04x)", le.Uint16(raw))
		}
		bo = binary.BigEndian
	}
	hdrLen := bo.Uint32(raw[4:])
	typeOff, typeLenAll := bo.Uint32(raw[8:]), bo.Uint32(raw[12:])
	strOff, strLen := bo.Uint32(raw[16:]), bo.Uint32(raw[20:])
	end := uint64(len(raw))
	if uint64(hdrLen)+uint64(typeOff)+uint64(typeLenAll) > end || uint64(hdrLen)+uint64(strOff)+uint64(strLen) > end {
		return 0, fmt.Errorf("BTF header names sections past its %d bytes", len(raw))
	}
	types := raw[hdrLen+typeOff : hdrLen+typeOff+typeLenAll]
	strs := raw[hdrLen+strOff : hdrLen+strOff+strLen]
	str := func(off uint32) (string, bool) {
		if off >= uint32(len(strs)) {
			return "", false
		}
		s := strs[off:]
		for i, c := range s {
			if c == 0 {
				return string(s[:i]), true
			}
		}
		return "", false
	}
	id, pos := uint32(1), 0
	for ; pos < len(types); id++ {
		if pos+typeLen > len(types) {
			return 0, fmt.Errorf("type %d is cut short", id)
		}
		nameOff, info := bo.Uint32(types[pos:]), bo.Uint32(types[pos+4:])
		kind, vlen := int(info>>24&0x1f), int(info&0xffff)
		if kind == kindFunc {
			if n, ok := str(nameOff); ok && n == name {
				return id, nil
			}
		}
		extra, err := extraLen(kind, vlen)
		if err != nil {
			return 0, fmt.Errorf("type %d: %w", id, err)
		}
		pos += typeLen + extra
	}
	if pos != len(types) {
		return 0, fmt.Errorf("type %d runs past the type section", id-1)
	}
	return 0, fmt.Errorf("function %s: %w", name, ErrNotFound)
}

// extraLen is how many bytes follow a struct btf_type of kind with vlen.
func extraLen(kind, vlen int) (int, error) {
	switch kind {
	case kindInt, kindVar, kindDeclTag:
		return 4, nil
	case kindArray:
		return 12, nil
	case kindStruct, kindUnion, kindDatasec, kindEnum64:
		return 12 * vlen, nil
	case kindEnum, kindFuncProto:
		return 8 * vlen, nil
	case kindPtr, kindFwd, kindTypedef, kindVolatile, kindConst, kindRestrict, kindFunc, kindFloat, kindTypeTag:
		return 0, nil
	}
	return 0, fmt.Errorf("unknown BTF kind %d", kind)
}
