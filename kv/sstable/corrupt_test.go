package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ringstore/ringstore"
)

// region is a byte range of an SST file and the sections errors about it
// may name: a flip inside [start, end) must give an error whose offset is
// in [start, end).
type region struct {
	name       string
	block      int // data block number, or -1
	start, end int64
}

// regions lists every data block, the index, filter, properties and
// footer of a file, from its reader.
func regions(t *testing.T, r *Reader, data []byte) []region {
	t.Helper()
	var rs []region
	for i := range r.NumBlocks() {
		h := r.Block(i)
		rs = append(rs, region{fmt.Sprintf("block %d", i), i, int64(h.Offset), int64(h.Offset + h.Len)})
	}
	f, err := decodeFooter(data[len(data)-FooterLen:], site{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name string
		sec  section
	}{{"index", f.index}, {"filter", f.filter}, {"properties", f.props}} {
		rs = append(rs, region{s.name, -1, int64(s.sec.off), int64(s.sec.off + s.sec.len)})
	}
	return append(rs, region{"footer", -1, int64(len(data) - FooterLen), int64(len(data))})
}

// checkFile opens the file and reads every block; it returns the first
// error.
func checkFile(path string) error {
	r, err := Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	it := r.NewIterator()
	for it.Next() {
	}
	return it.Err()
}

// checkBytes opens an in-memory file named name and reads block i (every
// block when i < 0); it returns the first error.
func checkBytes(data []byte, name string, i int) error {
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), name)
	if err != nil {
		return err
	}
	if i >= 0 && i < r.NumBlocks() {
		_, _, err := r.readBlock(i, nil)
		return err
	}
	it := r.NewIterator()
	for it.Next() {
	}
	return it.Err()
}

func smallFile(t *testing.T) (string, []byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 3))
	es := genEntries(rng, 120)
	path := filepath.Join(t.TempDir(), "small.sst")
	writeFile(t, path, es, Options{})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

func TestTruncated(t *testing.T) {
	path, data := smallFile(t)
	cut := filepath.Join(filepath.Dir(path), "cut.sst")
	lengths := []int{0, 1, FooterLen - 1, FooterLen, FooterLen + 1}
	for n := 0; n < len(data); n += 97 {
		lengths = append(lengths, n)
	}
	for n := max(len(data)-3*Alignment, 0); n < len(data); n++ {
		lengths = append(lengths, n) // every length through the metadata
	}
	for i, n := range lengths {
		var err error
		if i%50 == 0 { // a few through a real file and Open
			if err := os.WriteFile(cut, data[:n], 0o644); err != nil {
				t.Fatal(err)
			}
			err = checkFile(cut)
		} else {
			err = checkBytes(data[:n:n], cut, -1)
		}
		var ce *CorruptError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || !errors.Is(err, ringstore.ErrCorrupt) {
			t.Fatalf("file cut to %d of %d bytes: %v; want a *CorruptError", n, len(data), err)
		}
		if ce.Path != cut || ce.Offset < 0 || ce.Offset > int64(n) {
			t.Fatalf("file cut to %d bytes: error names %s offset %d", n, ce.Path, ce.Offset)
		}
		var rce *ringstore.CorruptError
		if !errors.As(err, &rce) || *rce != (ringstore.CorruptError{Path: ce.Path, Offset: ce.Offset, What: ce.What}) {
			t.Fatalf("file cut to %d bytes: %v as a *ringstore.CorruptError: %+v, want %+v", n, err, rce, *ce)
		}
	}
	// NewReader given a size larger than the file: the reads come up short.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := NewReader(f, int64(len(data))+Alignment, "grown"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("NewReader with a size past the end: %v", err)
	}
}

func TestBitFlips(t *testing.T) {
	path, data := smallFile(t)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	rs := regions(t, r, data)
	r.Close()
	if err := checkFile(path); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(filepath.Dir(path), "flipped.sst")
	buf := make([]byte, len(data))
	flips := 0
	for _, rg := range rs {
		// Every byte of the first block and of the metadata; a sample of
		// the other blocks' bytes and all of their last 16 (the trailer).
		step := int64(1)
		if rg.block > 0 {
			step = 61
		}
		for off := rg.start; off < rg.end; off += step {
			if rg.end-off <= 16 {
				step = 1
			}
			copy(buf, data)
			buf[off] ^= 1 << (off % 8)
			flips++
			var err error
			if flips%500 == 0 { // now and then through a real file and Open
				if err := os.WriteFile(bad, buf, 0o644); err != nil {
					t.Fatal(err)
				}
				err = checkFile(bad)
			} else {
				err = checkBytes(buf, bad, rg.block)
			}
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("bit %d of byte %d (%s) flipped: %v; want a *CorruptError", off%8, off, rg.name, err)
			}
			if ce.Path != bad || ce.Offset < rg.start || ce.Offset >= rg.end {
				t.Fatalf("bit flip at %d in %s [%d, %d): error names %s offset %d: %v", off, rg.name, rg.start, rg.end, ce.Path, ce.Offset, err)
			}
		}
	}
	t.Logf("%d single-bit flips over %d regions, all detected at the right place", flips, len(rs))
}

// TestDecodeBlockMalformed feeds decodeBlock blocks whose checksum is
// right but whose content is not, the damage a CRC alone cannot see (a
// bug in a writer, not a disk): each must be rejected.
func TestDecodeBlockMalformed(t *testing.T) {
	seal := func(used []byte) []byte {
		buf := make([]byte, alignUp(len(used)+blockTrailerLen))
		copy(buf, used)
		t := len(buf) - blockTrailerLen
		buf[t], buf[t+1], buf[t+2], buf[t+3] = byte(len(used)), byte(len(used)>>8), byte(len(used)>>16), byte(len(used)>>24)
		c := blockCRC(used)
		buf[t+4], buf[t+5], buf[t+6], buf[t+7] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
		return buf
	}
	good := func(keys ...InternalKey) []byte {
		var b blockBuilder
		for _, k := range keys {
			b.add(appendKey(nil, k), []byte("v"))
		}
		out, used := b.finish(nil)
		return out[:used]
	}
	k := func(u string, seq uint64) InternalKey {
		return InternalKey{UserKey: []byte(u), Seq: seq, Kind: KindSet}
	}
	ok := good(k("a", 1), k("b", 1))
	if _, err := decodeBlock(seal(ok), site{"x", 0}); err != nil {
		t.Fatalf("good block: %v", err)
	}
	cases := map[string][]byte{
		"no restarts":      {0, 0, 0, 0},
		"out of order":     good(k("b", 1), k("a", 1)),
		"duplicate":        good(k("a", 1), k("a", 1)),
		"short key":        {0, 3, 0, 'a', 'b', 'c', 0, 0, 0, 0, 1, 0, 0, 0},
		"bad kind":         good(InternalKey{UserKey: []byte("a"), Seq: 1, Kind: 9}),
		"restart misplace": append(append([]byte{}, ok[:len(ok)-8]...), 1, 0, 0, 0, 1, 0, 0, 0),
		"delete w/ value":  good(InternalKey{UserKey: []byte("a"), Seq: 1, Kind: KindDelete}),
		"value past end":   {0, 9, 200, 'a', 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0},
	}
	for name, used := range cases {
		_, err := decodeBlock(seal(used), site{"x", 4096})
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Offset < 4096 {
			t.Errorf("%s: %v; want a *CorruptError", name, err)
		}
		// A lookup that reads the whole block (a key after every
		// other) meets the same damage.
		_, _, err = lookupInBlock(seal(used), site{"x", 4096}, []byte("zzz"), MaxSeq, 0)
		if !errors.As(err, &ce) || ce.Offset < 4096 {
			t.Errorf("%s: lookup: %v; want a *CorruptError", name, err)
		}
	}
}
