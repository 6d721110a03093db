package manifest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/internal/crc32c"
	"github.com/ringstore/ringstore/kv/internal/base"
)

func ikey(k string, seq uint64, kind base.Kind) base.InternalKey {
	return base.InternalKey{UserKey: []byte(k), Seq: seq, Kind: kind}
}

// randomVersion returns a valid Version with up to maxFiles files per
// level.
func randomVersion(r *rand.Rand, maxFiles int) *Version {
	v := &Version{FlushedSeq: r.Uint64N(1 << 40)}
	num := uint64(1)
	for level := range v.Levels {
		n := r.IntN(maxFiles + 1)
		key := 0
		for range n {
			maxSeq := r.Uint64N(base.MaxSeq + 1)
			if r.IntN(2) == 0 {
				maxSeq = r.Uint64N(1000)
			}
			f := FileMeta{
				Num: num, Size: r.Uint64(), MaxSeq: maxSeq, Entries: r.Uint64N(1 << 20),
			}
			num += 1 + r.Uint64N(3)
			a, b := key+r.IntN(5), 0
			b = a + r.IntN(5)
			key = b + 1
			sk, lk := fmt.Sprintf("k%06d", a), fmt.Sprintf("k%06d", b)
			if a == 0 && r.IntN(2) == 0 {
				sk = "" // the empty user key
			}
			f.Smallest = ikey(sk, r.Uint64N(maxSeq+1), base.Kind(r.IntN(2)))
			f.Largest = ikey(lk, r.Uint64N(maxSeq+1), base.Kind(r.IntN(2)))
			if a == b && base.Compare(f.Smallest, f.Largest) > 0 {
				f.Smallest, f.Largest = f.Largest, f.Smallest
			}
			if level == 0 {
				v.Levels[0] = append([]FileMeta{f}, v.Levels[0]...) // newest first
			} else {
				v.Levels[level] = append(v.Levels[level], f)
			}
		}
	}
	v.NextFileNum = num + r.Uint64N(10)
	return v
}

func equalVersions(a, b *Version) bool {
	if a.NextFileNum != b.NextFileNum || a.FlushedSeq != b.FlushedSeq {
		return false
	}
	for l := range a.Levels {
		if len(a.Levels[l]) != len(b.Levels[l]) {
			return false
		}
		for i, f := range a.Levels[l] {
			g := b.Levels[l][i]
			if f.Num != g.Num || f.Size != g.Size || f.MaxSeq != g.MaxSeq || f.Entries != g.Entries ||
				base.Compare(f.Smallest, g.Smallest) != 0 || base.Compare(f.Largest, g.Largest) != 0 {
				return false
			}
		}
	}
	return true
}

func checkCorrupt(t *testing.T, err error, path string, n int) *CorruptError {
	t.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || !errors.Is(err, ringstore.ErrCorrupt) {
		t.Fatalf("error %v is not a *CorruptError", err)
	}
	if ce.Path != path || ce.Offset < 0 || ce.Offset > int64(n) {
		t.Fatalf("error names %s offset %d for %d bytes of %s: %v", ce.Path, ce.Offset, n, path, err)
	}
	var rce *ringstore.CorruptError
	if !errors.As(err, &rce) || *rce != (ringstore.CorruptError{Path: ce.Path, Offset: ce.Offset, What: ce.What}) {
		t.Fatalf("error %v as a *ringstore.CorruptError: %+v, want %+v", err, rce, *ce)
	}
	return ce
}

func TestMagic(t *testing.T) {
	if got := binary.LittleEndian.Uint64([]byte("RSMANIFS")); got != Magic {
		t.Fatalf("Magic %#x, want %#x", Magic, got)
	}
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vs := []*Version{{}, {NextFileNum: 1, FlushedSeq: 5}}
	for i := range 300 {
		vs = append(vs, randomVersion(r, 1+i%10))
	}
	for i, v := range vs {
		if err := v.Validate(); err != nil {
			t.Fatalf("version %d: %v", i, err)
		}
		b := Encode(v)
		got, err := Decode(b, "m")
		if err != nil {
			t.Fatalf("version %d: %v", i, err)
		}
		if !equalVersions(v, got) {
			t.Fatalf("version %d: round trip changed it:\n%+v\n%+v", i, v, got)
		}
		if !bytes.Equal(Encode(got), b) {
			t.Fatalf("version %d: re-encoding differs", i)
		}
		// Decode copies: changing b does not change got.
		for j := range b {
			b[j] = 0xff
		}
		if !equalVersions(v, got) {
			t.Fatalf("version %d: decoded version aliases its input", i)
		}
	}
}

func TestTruncations(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 5 {
		b := Encode(randomVersion(r, 4))
		for n := range len(b) {
			_, err := Decode(b[:n], "m")
			checkCorrupt(t, err, "m", n)
		}
		// And a byte too many.
		_, err := Decode(append(bytes.Clone(b), 0), "m")
		checkCorrupt(t, err, "m", len(b)+1)
	}
}

func TestBitFlips(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	b := Encode(randomVersion(r, 5))
	for i := range len(b) * 8 {
		c := bytes.Clone(b)
		c[i/8] ^= 1 << (i % 8)
		_, err := Decode(c, "m")
		checkCorrupt(t, err, "m", len(c))
	}
}

// seal replaces the checksum at the end of b with a correct one.
func seal(b []byte) []byte {
	b = bytes.Clone(b)
	n := len(b) - crcLen
	binary.LittleEndian.PutUint32(b[n:], crc32c.Checksum(b[:n]))
	return b
}

// TestFieldChecks damages fields behind a correct checksum.
func TestFieldChecks(t *testing.T) {
	v := &Version{NextFileNum: 10, FlushedSeq: 3}
	v.Levels[1] = []FileMeta{{Num: 2, Size: 100, MaxSeq: 9, Entries: 4, Smallest: ikey("a", 1, 1), Largest: ikey("b", 2, 0)}}
	good := Encode(v)
	// Layout: header 12 | next 1 | flushed 1 | L0 count 1 | L1 count 1 |
	// num size maxSeq entries (1 byte each) | 1 "a" trailer | 1 "b" trailer | L2..L6 | crc
	const file = 12 + 4
	for _, tc := range []struct {
		name string
		edit func(b []byte) []byte
		what string
	}{
		{"version", func(b []byte) []byte { b[8] = 2; return b }, "format version"},
		{"non-minimal uvarint", func(b []byte) []byte {
			return append(append(b[:12:12], 0x8a, 0x00), b[13:]...) // NextFileNum 10 in two bytes
		}, "non-minimal"},
		{"overlong uvarint", func(b []byte) []byte {
			return append(append(b[:12:12], bytes.Repeat([]byte{0xff}, 11)...), b[13:]...)
		}, "bad uvarint"},
		{"count too large", func(b []byte) []byte { b[14] = 0x7f; return b }, "count 127 too large"},
		{"key length", func(b []byte) []byte { b[file+4] = 0x70; return b }, "past the end"},
		{"kind", func(b []byte) []byte { b[file+4+1+1] = 7; return b }, "unknown kind"},
		{"trailing bytes", func(b []byte) []byte { n := len(b) - 4; return append(b[:n:n], 0, 0, 0, 0, 0) }, "after the last level"},
		{"invalid version", func(b []byte) []byte { b[12] = 2; return b }, "not below NextFileNum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := seal(tc.edit(bytes.Clone(good)))
			_, err := Decode(b, "m")
			ce := checkCorrupt(t, err, "m", len(b))
			if !strings.Contains(ce.What, tc.what) {
				t.Fatalf("error %v does not say %q", err, tc.what)
			}
			if tc.name == "invalid version" && ce.Offset != file {
				t.Fatalf("error %v: offset %d, want the file record's %d", err, ce.Offset, file)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	f := func(num uint64, small, large string) FileMeta {
		return FileMeta{Num: num, MaxSeq: 10, Smallest: ikey(small, 5, 1), Largest: ikey(large, 5, 1)}
	}
	for _, tc := range []struct {
		name   string
		levels map[int][]FileMeta
		next   uint64
		level  int
		index  int
		what   string
	}{
		{"ok", map[int][]FileMeta{0: {f(5, "a", "z"), f(3, "b", "c")}, 1: {f(1, "a", "b"), f(2, "c", "d")}, 6: {f(4, "", "")}}, 6, 0, 0, ""},
		{"L1 overlap", map[int][]FileMeta{1: {f(1, "a", "c"), f(2, "c", "d")}}, 6, 1, 1, "overlaps 000001.sst"},
		{"L1 overlap same user key, other seqs", map[int][]FileMeta{1: {f(1, "a", "c"),
			{Num: 2, MaxSeq: 10, Smallest: ikey("c", 1, 1), Largest: ikey("d", 1, 1)}}}, 6, 1, 1, "overlaps"},
		{"L2 unsorted", map[int][]FileMeta{2: {f(1, "c", "d"), f(2, "a", "b")}}, 6, 2, 1, "not sorted"},
		{"L0 oldest first", map[int][]FileMeta{0: {f(1, "a", "b"), f(2, "a", "b")}}, 6, 0, 1, "newest first"},
		{"duplicate num", map[int][]FileMeta{0: {f(3, "a", "b")}, 3: {f(3, "a", "b")}}, 6, 3, 0, "also used in L0"},
		{"num = NextFileNum", map[int][]FileMeta{1: {f(1, "a", "b"), f(6, "c", "d")}}, 6, 1, 1, "not below NextFileNum 6"},
		{"smallest after largest", map[int][]FileMeta{4: {f(1, "b", "a")}}, 6, 4, 0, "after largest"},
		{"seq over MaxSeq", map[int][]FileMeta{1: {{Num: 1, MaxSeq: 4, Smallest: ikey("a", 5, 1), Largest: ikey("b", 1, 1)}}}, 6, 1, 0, "over MaxSeq 4"},
		{"bad kind", map[int][]FileMeta{1: {{Num: 1, Smallest: ikey("a", 0, 2), Largest: ikey("b", 0, 1)}}}, 6, 1, 0, "unknown kind"},
		{"MaxSeq too large", map[int][]FileMeta{1: {{Num: 1, MaxSeq: base.MaxSeq + 1}}}, 6, 1, 0, "over base.MaxSeq"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &Version{NextFileNum: tc.next}
			for l, fs := range tc.levels {
				v.Levels[l] = fs
			}
			err := v.Validate()
			if tc.what == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ie *InvalidError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not an *InvalidError", err)
			}
			if ie.Level != tc.level || ie.Index != tc.index || !strings.Contains(err.Error(), tc.what) {
				t.Fatalf("error %v (L%d #%d), want L%d #%d %q", err, ie.Level, ie.Index, tc.level, tc.index, tc.what)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%06d.sst", ie.Num)) {
				t.Fatalf("error %v does not name the file", err)
			}
			// Write refuses it, Decode calls it damage.
			if werr := Write(t.TempDir(), v); !errors.Is(werr, ErrInvalid) {
				t.Fatalf("Write of an invalid version: %v", werr)
			}
			_, derr := Decode(Encode(v), "m")
			checkCorrupt(t, derr, "m", len(Encode(v)))
		})
	}
}

func TestWriteLoad(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of an empty dir: %v", err)
	}
	// A temp file from a crash is not read, and not a manifest.
	if err := os.WriteFile(filepath.Join(dir, TempName), []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load with only a MANIFEST.tmp: %v", err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 5 {
		v := randomVersion(r, 6)
		if i == 3 { // a longer stale temp file than the new manifest
			if err := os.WriteFile(filepath.Join(dir, TempName), bytes.Repeat([]byte{1}, 1<<16), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := Write(dir, v); err != nil {
			t.Fatal(err)
		}
		got, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !equalVersions(v, got) {
			t.Fatalf("write %d: Load returned another version", i)
		}
		if _, err := os.Stat(filepath.Join(dir, TempName)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("MANIFEST.tmp left after Write: %v", err)
		}
	}
	// Damage on disk.
	path := filepath.Join(dir, FileName)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	checkCorrupt(t, err, path, len(b))
	// Write into a missing directory fails and leaves nothing.
	if err := Write(filepath.Join(dir, "nope"), &Version{}); err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
}

func TestEmptyVersionShape(t *testing.T) {
	got, err := Decode(Encode(&Version{}), "m")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, &Version{}) {
		t.Fatalf("empty version decoded as %+v", got)
	}
}

func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 10))
	f.Add(Encode(&Version{}))
	for i := range 8 {
		f.Add(Encode(randomVersion(r, i)))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		// As they are, and sealed with a correct checksum so the fuzzer
		// reaches the field checks behind it.
		inputs := [][]byte{b}
		if len(b) >= headerLen+crcLen {
			inputs = append(inputs, seal(b))
		}
		for _, in := range inputs {
			v, err := Decode(in, "fuzz")
			if err != nil {
				checkCorrupt(t, err, "fuzz", len(in))
				continue
			}
			if out := Encode(v); !bytes.Equal(out, in) {
				t.Fatalf("decoded %x, re-encoded %x", in, out)
			}
		}
	})
}
