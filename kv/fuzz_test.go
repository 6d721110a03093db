package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ringstore/ringstore/kv/sstable"
)

// FuzzDecodeBatch: decodeBatch never panics on any input, and an input it
// accepts is the encoding of the operations it reported: putting them back
// into a Batch (Put and Delete) and encoding it with the decoded seq gives
// the same bytes, and the seqs it reported are seq, seq+1, ...
func FuzzDecodeBatch(f *testing.F) {
	var b Batch
	b.Put([]byte("key"), []byte("value"))
	f.Add(append([]byte{}, b.encode(1)...))
	b.Delete([]byte("gone"))
	b.Put([]byte{}, []byte{})
	b.Put([]byte("k\x00\xff"), bytes.Repeat([]byte{0xab}, 300))
	f.Add(append([]byte{}, b.encode(1<<40)...))
	b.Reset()
	b.Delete([]byte("only"))
	f.Add(append([]byte{}, b.encode(sstable.MaxSeq)...))
	// Found by the fuzzer: a value length of 44 written as 0xac 0x00.
	f.Add([]byte("0000000\x00\x04\x00\x00\x00\x01\x03000\x0500000\x00\x040000\x01\x00\x00\x01\x03000\xac\x0000000000000000000000000000000000000000000000"))
	f.Add([]byte{})
	f.Add(make([]byte, batchHeaderLen))
	f.Fuzz(func(t *testing.T, data []byte) {
		type op struct {
			seq        uint64
			kind       sstable.Kind
			key, value []byte
		}
		var ops []op
		seq, err := decodeBatch(data, func(seq uint64, kind sstable.Kind, key, value []byte) error {
			ops = append(ops, op{seq, kind, append([]byte{}, key...), append([]byte{}, value...)})
			return nil
		})
		if err != nil {
			return
		}
		if seq != binary.LittleEndian.Uint64(data) || len(ops) != int(binary.LittleEndian.Uint32(data[8:])) {
			t.Fatalf("decoded seq %d and %d operations from a header of seq %d, count %d",
				seq, len(ops), binary.LittleEndian.Uint64(data), binary.LittleEndian.Uint32(data[8:]))
		}
		var re Batch
		for i, o := range ops {
			if o.seq != seq+uint64(i) {
				t.Fatalf("operation %d has seq %d, want %d", i, o.seq, seq+uint64(i))
			}
			switch o.kind {
			case sstable.KindSet:
				re.Put(o.key, o.value)
			case sstable.KindDelete:
				if len(o.value) != 0 {
					t.Fatalf("operation %d: a delete with a %d-byte value", i, len(o.value))
				}
				re.Delete(o.key)
			default:
				t.Fatalf("operation %d: kind %d accepted", i, o.kind)
			}
		}
		if err := re.check(); err != nil {
			t.Fatalf("the re-encoded batch fails its own check: %v", err)
		}
		if got := re.encode(seq); !bytes.Equal(got, data) {
			t.Fatalf("re-encoded to %d bytes %x, decoded from %d bytes %x", len(got), got, len(data), data)
		}
	})
}

// TestDecodeBatchOverlongUvarint: a batch whose key length is written in two
// bytes (0x83 0x00 for 3) where one does is not an encoding Batch produces;
// decodeBatch should refuse it, as manifest.Decode refuses non-minimal
// uvarints, so that an encoded batch is canonical.
func TestDecodeBatchOverlongUvarint(t *testing.T) {
	var b Batch
	b.Put([]byte("key"), []byte("value"))
	good := append([]byte{}, b.encode(7)...)
	// header | kind | keyLen 3 | ...: make keyLen 0x83 0x00.
	bad := append(append(append([]byte{}, good[:batchHeaderLen+1]...), 0x83, 0x00), good[batchHeaderLen+2:]...)
	if _, err := decodeBatch(good, func(uint64, sstable.Kind, []byte, []byte) error { return nil }); err != nil {
		t.Fatalf("the canonical batch: %v", err)
	}
	var key []byte
	_, err := decodeBatch(bad, func(_ uint64, _ sstable.Kind, k, _ []byte) error { key = k; return nil })
	if err == nil {
		t.Fatalf("decodeBatch accepts a key length written as 0x83 0x00 (decoded key %q): one batch would have many encodings", key)
	}
	if !errors.Is(err, errBadBatch) {
		t.Errorf("decodeBatch of an overlong uvarint: %v, want errBadBatch", err)
	}
}
