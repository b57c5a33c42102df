package vram

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// GGUFInfo is the part of a GGUF file's metadata the llama.cpp estimator
// uses: layer count and attention shape (for the KV cache per token).
type GGUFInfo struct {
	Arch            string
	BlockCount      int64
	ContextLength   int64
	EmbeddingLength int64
	HeadCount       int64
	HeadCountKV     int64
	KeyLength       int64
	ValueLength     int64
}

// ggufMaxHeader bounds how much of a file ReadGGUF reads: the metadata
// (tokenizer vocabularies included) comes before the tensors and is a few
// MiB; nothing worth more than this is read from an untrusted file.
const ggufMaxHeader = 64 << 20

// ggufMaxNesting bounds arrays of arrays (llama.cpp writes none): each
// level is a call, and 64 MiB of 12-byte array headers would otherwise
// recurse five million calls deep, past the goroutine stack's limit.
const ggufMaxNesting = 8

// GGUF metadata value types (ggml/include/gguf.h).
const (
	ggufUint8 = iota
	ggufInt8
	ggufUint16
	ggufInt16
	ggufUint32
	ggufInt32
	ggufFloat32
	ggufBool
	ggufString
	ggufArray
	ggufUint64
	ggufInt64
	ggufFloat64
)

var ggufScalarSize = map[uint32]int{
	ggufUint8: 1, ggufInt8: 1, ggufUint16: 2, ggufInt16: 2, ggufUint32: 4, ggufInt32: 4,
	ggufFloat32: 4, ggufBool: 1, ggufUint64: 8, ggufInt64: 8, ggufFloat64: 8,
}

type ggufReader struct {
	r *bufio.Reader
	n int64
}

func (g *ggufReader) read(p []byte) error {
	if g.n+int64(len(p)) > ggufMaxHeader {
		return errors.New("GGUF metadata larger than 64 MiB")
	}
	_, err := io.ReadFull(g.r, p)
	g.n += int64(len(p))
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("GGUF metadata cut short at byte %d: %w", g.n-int64(len(p)), io.ErrUnexpectedEOF)
	}
	return err
}

func (g *ggufReader) u32() (uint32, error) {
	var b [4]byte
	err := g.read(b[:])
	return binary.LittleEndian.Uint32(b[:]), err
}

func (g *ggufReader) u64() (uint64, error) {
	var b [8]byte
	err := g.read(b[:])
	return binary.LittleEndian.Uint64(b[:]), err
}

// ggufMaxKept is the longest string str keeps: the keys ReadGGUF wants and
// architecture names are far shorter, so a longer string, cut to this, still
// matches nothing; the rest is skipped without being allocated.
const ggufMaxKept = 256

// str reads a string, keeping its first ggufMaxKept bytes.
func (g *ggufReader) str() (string, error) {
	n, err := g.u64()
	if err != nil {
		return "", err
	}
	if n > 1<<20 {
		return "", fmt.Errorf("GGUF string of %d bytes", n)
	}
	b := make([]byte, min(n, ggufMaxKept))
	if err := g.read(b); err != nil {
		return "", err
	}
	return string(b), g.skip(int64(n) - int64(len(b)))
}

func (g *ggufReader) skip(n int64) error {
	if g.n+n > ggufMaxHeader {
		return errors.New("GGUF metadata larger than 64 MiB")
	}
	_, err := g.r.Discard(int(n))
	g.n += n
	if err == io.EOF {
		return fmt.Errorf("GGUF metadata cut short before byte %d: %w", g.n, io.ErrUnexpectedEOF)
	}
	return err
}

// integer reads a scalar of type t as int64 (ok=false for non-integers,
// which are skipped).
func (g *ggufReader) integer(t uint32) (int64, bool, error) {
	size, ok := ggufScalarSize[t]
	if !ok {
		return 0, false, fmt.Errorf("GGUF value type %d", t)
	}
	var b [8]byte
	if err := g.read(b[:size]); err != nil {
		return 0, false, err
	}
	switch t {
	case ggufUint8, ggufBool:
		return int64(b[0]), true, nil
	case ggufInt8:
		return int64(int8(b[0])), true, nil
	case ggufUint16:
		return int64(binary.LittleEndian.Uint16(b[:])), true, nil
	case ggufInt16:
		return int64(int16(binary.LittleEndian.Uint16(b[:]))), true, nil
	case ggufUint32:
		return int64(binary.LittleEndian.Uint32(b[:])), true, nil
	case ggufInt32:
		return int64(int32(binary.LittleEndian.Uint32(b[:]))), true, nil
	case ggufUint64, ggufInt64:
		return int64(binary.LittleEndian.Uint64(b[:])), true, nil
	}
	return 0, false, nil // floats
}

// value reads one value of type t: integers (the maximum, for arrays such
// as per-layer head_count_kv) and strings are returned, the rest skipped.
// depth is the number of arrays around it.
func (g *ggufReader) value(t uint32, depth int) (int64, string, error) {
	switch t {
	case ggufString:
		s, err := g.str()
		return 0, s, err
	case ggufArray:
		if depth >= ggufMaxNesting {
			return 0, "", fmt.Errorf("GGUF arrays nested deeper than %d", ggufMaxNesting)
		}
		et, err := g.u32()
		if err != nil {
			return 0, "", err
		}
		n, err := g.u64()
		if err != nil {
			return 0, "", err
		}
		if n > ggufMaxHeader {
			return 0, "", fmt.Errorf("GGUF array of %d elements", n)
		}
		switch et {
		case ggufFloat32, ggufFloat64, ggufBool, ggufUint8, ggufInt8:
			return 0, "", g.skip(int64(ggufScalarSize[et]) * int64(n))
		}
		var best int64
		for i := uint64(0); i < n; i++ {
			v, _, err := g.value(et, depth+1)
			if err != nil {
				return 0, "", err
			}
			best = max(best, v)
		}
		return best, "", nil
	}
	v, _, err := g.integer(t)
	return v, "", err
}

// ReadGGUF reads the metadata of a GGUF (version 2 or 3) file.
func ReadGGUF(r io.Reader) (GGUFInfo, error) {
	g := &ggufReader{r: bufio.NewReaderSize(r, 1<<16)}
	var info GGUFInfo
	var magic [4]byte
	if err := g.read(magic[:]); err != nil {
		return info, fmt.Errorf("not a GGUF file: %w", err)
	}
	if string(magic[:]) != "GGUF" {
		return info, errors.New("not a GGUF file (bad magic)")
	}
	ver, err := g.u32()
	if err != nil {
		return info, err
	}
	if ver < 2 || ver > 3 {
		return info, fmt.Errorf("GGUF version %d not supported", ver)
	}
	if _, err := g.u64(); err != nil { // tensor count
		return info, err
	}
	nkv, err := g.u64()
	if err != nil {
		return info, err
	}
	want := map[string]*int64{
		"block_count": &info.BlockCount, "context_length": &info.ContextLength,
		"embedding_length": &info.EmbeddingLength, "attention.head_count": &info.HeadCount,
		"attention.head_count_kv": &info.HeadCountKV, "attention.key_length": &info.KeyLength,
		"attention.value_length": &info.ValueLength,
	}
	for i := uint64(0); i < nkv; i++ {
		key, err := g.str()
		if err != nil {
			return info, err
		}
		if strings.HasPrefix(key, "tokenizer.") && info.BlockCount > 0 && info.HeadCount > 0 && info.EmbeddingLength > 0 && info.ContextLength > 0 {
			break // the vocabulary follows; everything wanted is known
		}
		t, err := g.u32()
		if err != nil {
			return info, err
		}
		v, s, err := g.value(t, 0)
		if err != nil {
			return info, err
		}
		if key == "general.architecture" {
			info.Arch = s
			continue
		}
		if arch, field, ok := strings.Cut(key, "."); ok && arch != "general" && arch != "tokenizer" {
			if p, ok := want[field]; ok && (info.Arch == "" || arch == info.Arch) {
				*p = v
			}
		}
	}
	if info.BlockCount == 0 {
		return info, errors.New("GGUF metadata has no block_count")
	}
	return info, nil
}

// KVBytesPerToken is the KV cache one token of context takes on the layers
// of the model, with K and V stored at bytesK and bytesV per element.
// ok=false when the attention shape is unknown.
func (i GGUFInfo) KVBytesPerToken(bytesK, bytesV float64) (float64, bool) {
	if i.BlockCount == 0 || i.HeadCount == 0 || i.EmbeddingLength == 0 {
		return 0, false
	}
	kvHeads := i.HeadCountKV
	if kvHeads == 0 {
		kvHeads = i.HeadCount
	}
	kLen, vLen := i.KeyLength, i.ValueLength
	if kLen == 0 {
		kLen = i.EmbeddingLength / i.HeadCount
	}
	if vLen == 0 {
		vLen = kLen
	}
	return float64(i.BlockCount) * float64(kvHeads) * (float64(kLen)*bytesK + float64(vLen)*bytesV), true
}
