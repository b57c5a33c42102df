package vram

import (
	"bytes"
	"encoding/binary"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// ggufBuf builds GGUF bytes for tests.
type ggufBuf struct{ bytes.Buffer }

func (g *ggufBuf) w(v any)      { binary.Write(&g.Buffer, binary.LittleEndian, v) }
func (g *ggufBuf) str(s string) { g.w(uint64(len(s))); g.WriteString(s) }

// kv writes key k with a value of type t (v written as is).
func (g *ggufBuf) kv(k string, t uint32, v ...any) {
	g.str(k)
	g.w(t)
	for _, x := range v {
		g.w(x)
	}
}

// newGGUF starts a GGUF file of version ver with the counts given.
func newGGUF(ver uint32, tensors, kvs uint64) *ggufBuf {
	g := &ggufBuf{}
	g.WriteString("GGUF")
	g.w(ver)
	g.w(tensors)
	g.w(kvs)
	return g
}

// llamaGGUF is a valid version ver header of a Llama-like model.
func llamaGGUF(ver uint32) []byte {
	g := newGGUF(ver, 291, 8)
	g.kv("general.architecture", ggufString)
	g.str("llama")
	g.kv("llama.block_count", ggufUint32, uint32(32))
	g.kv("llama.context_length", ggufUint32, uint32(8192))
	g.kv("llama.embedding_length", ggufUint64, uint64(4096))
	g.kv("llama.rope.freq_base", ggufFloat32, float32(500000))
	g.kv("llama.attention.head_count", ggufUint32, uint32(32))
	g.kv("llama.attention.head_count_kv", ggufArray, uint32(ggufInt32), uint64(2), int32(4), int32(8))
	g.kv("tokenizer.ggml.tokens", ggufArray, uint32(ggufString), uint64(2))
	g.str("a")
	g.str("b")
	return g.Bytes()
}

// ggufSeeds are valid headers, truncations of them, and headers that
// claim more than they hold.
func ggufSeeds() [][]byte {
	v3 := llamaGGUF(3)
	seeds := [][]byte{v3, llamaGGUF(2), v3[:len(v3)/2], v3[:24], []byte("GGUF"), []byte("GGML\x03\x00\x00\x00"), nil}

	g := newGGUF(3, 1<<60, 1<<60) // 2^60 tensors and keys
	g.kv("x.block_count", ggufUint8, uint8(1))
	seeds = append(seeds, g.Bytes())

	g = newGGUF(3, 0, 1) // a 4 GiB key
	g.w(uint64(4 << 30))
	seeds = append(seeds, g.Bytes())

	g = newGGUF(3, 0, 1) // a 4 GiB string value
	g.kv("general.architecture", ggufString, uint64(4<<30))
	seeds = append(seeds, g.Bytes())

	g = newGGUF(3, 0, 1) // an array of 2^62 uint16
	g.kv("llama.block_count", ggufArray, uint32(ggufUint16), uint64(1<<62))
	seeds = append(seeds, g.Bytes())

	g = newGGUF(3, 0, 2) // nested arrays
	g.kv("llama.block_count", ggufArray, uint32(ggufArray), uint64(1), uint32(ggufArray), uint64(1), uint32(ggufInt64), uint64(1), int64(40))
	g.kv("general.x", ggufArray, uint32(ggufFloat64), uint64(1<<40))
	seeds = append(seeds, g.Bytes())

	g = newGGUF(3, 0, 1) // an unknown value type
	g.kv("llama.block_count", 99, uint32(1))
	seeds = append(seeds, g.Bytes())
	return seeds
}

// FuzzReadGGUF feeds ReadGGUF any bytes (the model file an agent names).
// It checks: no panic; allocation bounded by the input, not by the counts
// and lengths the header claims (a claim of 2^60 keys or a 4 GiB string
// costs nothing); the same answer read whole and one byte at a time; an
// accepted header starts with the magic and version 2 or 3 and has a
// positive block count; errors are one line.
func FuzzReadGGUF(f *testing.F) {
	for _, s := range ggufSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		info, err := ReadGGUF(bytes.NewReader(data))
		runtime.ReadMemStats(&after)
		// bufio's 64 KiB, the bytes read twice over (a buffer, a string),
		// and small change; nothing for what the header only claims.
		if alloc, bound := after.TotalAlloc-before.TotalAlloc, uint64(3*len(data))+256<<10; alloc > bound {
			t.Errorf("ReadGGUF of %d bytes allocated %d bytes (bound %d)", len(data), alloc, bound)
		}
		info2, err2 := ReadGGUF(iotest.OneByteReader(bytes.NewReader(data)))
		if info2 != info || (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
			t.Errorf("whole: %+v, %v; a byte at a time: %+v, %v", info, err, info2, err2)
		}
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Errorf("error %q spans lines", err)
			}
			return
		}
		if len(data) < 24 || string(data[:4]) != "GGUF" || (data[4] != 2 && data[4] != 3) {
			t.Errorf("accepted %q as GGUF", data[:min(len(data), 24)])
		}
		if info.BlockCount <= 0 {
			t.Errorf("accepted with block count %d", info.BlockCount)
		}
	})
}

// Shapes a fuzzer's small inputs do not reach.
func TestReadGGUFBounds(t *testing.T) {
	deep := newGGUF(3, 0, 1)
	deep.str("llama.block_count")
	deep.w(uint32(ggufArray))
	const levels = 100000
	for range levels {
		deep.w(uint32(ggufArray))
		deep.w(uint64(1))
	}
	long := newGGUF(3, 0, 3) // a 100 KB string: skipped, not kept
	long.kv("tokenizer.chat_template", ggufString)
	long.str(strings.Repeat("x", 100<<10))
	long.kv("qwen2.block_count", ggufUint32, uint32(28))
	long.kv("general.architecture", ggufString)
	long.str(strings.Repeat("y", 1000))
	tests := []struct {
		name   string
		r      io.Reader
		errHas string // "": 28 blocks
	}{
		{name: "long strings", r: bytes.NewReader(long.Bytes())},
		{name: "arrays nested 100000 deep", r: bytes.NewReader(deep.Bytes()), errHas: "nested"},
		// 2^62 keys, then zeros: empty keys of uint8 values without end.
		{name: "an endless file", r: io.MultiReader(bytes.NewReader(newGGUF(3, 0, 1<<62).Bytes()), zeros{}), errHas: "larger than 64 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info, err := ReadGGUF(tc.r)
			if tc.errHas == "" {
				if err != nil || info.BlockCount != 28 || len(info.Arch) != ggufMaxKept {
					t.Errorf("ReadGGUF = %d blocks, arch of %d bytes, %v; want 28 and %d", info.BlockCount, len(info.Arch), err, ggufMaxKept)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("error %v, want %q", err, tc.errHas)
			}
		})
	}
}

// zeros reads as /dev/zero does.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
