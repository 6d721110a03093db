package arrowscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// consume scans every column of f and touches every value (String walks
// each array), so that a record that would panic its user is found too.
// It returns the scan's error.
func consume(f *File, columns []string) error {
	s, err := f.Scan(columns)
	if err != nil {
		return err
	}
	defer s.Close()
	for s.Next() {
		rec := s.Record()
		for _, c := range rec.Columns() {
			_ = c.String()
		}
	}
	return s.Err()
}

// checkCorruptResult: opening and scanning damaged data may fail or not
// (a flipped bit in a value is just another value), but an error must
// name the file, and nothing may panic (a panic fails the test by itself).
func checkCorruptResult(t *testing.T, name, what string, open func() (*File, error)) {
	t.Helper()
	f, err := open()
	if err == nil {
		for _, cols := range [][]string{nil, {"country"}, {"name", "id"}} {
			if err = consume(f, cols); err != nil {
				break
			}
		}
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err != nil && !strings.Contains(err.Error(), name) {
		t.Errorf("%s: error does not name the file %s: %v", what, name, err)
	}
	if err != nil {
		var ce *CorruptError
		var re *ReadError
		if !errors.As(err, &ce) && !errors.As(err, &re) && !errors.Is(err, ErrUnknownColumn) {
			t.Errorf("%s: error is neither *CorruptError nor *ReadError: %T %v", what, err, err)
		}
		if ce != nil {
			checkRingstoreCorrupt(t, what, err, ce)
		}
	}
}

// checkRingstoreCorrupt fails unless errors.As gives err, whose
// *CorruptError is ce, as a *ringstore.CorruptError with ce's path and
// offset and a What made of its part, detail and cause.
func checkRingstoreCorrupt(t *testing.T, what string, err error, ce *CorruptError) {
	t.Helper()
	var rce *ringstore.CorruptError
	if !errors.As(err, &rce) || rce.Path != ce.Path || rce.Offset != ce.Offset {
		t.Errorf("%s: %v: as a *ringstore.CorruptError %+v, want %s at offset %d", what, err, rce, ce.Path, ce.Offset)
		return
	}
	for _, s := range []string{ce.Part, ce.Detail} {
		if !strings.Contains(rce.What, s) {
			t.Errorf("%s: %v: as a *ringstore.CorruptError says %q, without %q", what, err, rce.What, s)
		}
	}
	if ce.Err != nil && !strings.HasSuffix(rce.What, ce.Err.Error()) {
		t.Errorf("%s: %v: as a *ringstore.CorruptError says %q, without the cause %q", what, err, rce.What, ce.Err)
	}
}

// truncations lists lengths to cut a file of size bytes to.
func truncations(size int) []int {
	seen := map[int]bool{}
	var out []int
	add := func(n int) {
		if n >= 0 && n < size && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range []int{0, 1, 5, 6, 7, 8, 9, 15, 16, 17, 24, 100} {
		add(n)
	}
	for k := 1; k < 41; k++ {
		add(size * k / 41)
	}
	for d := 1; d <= 24; d++ {
		add(size - d)
	}
	return out
}

func TestTruncatedFiles(t *testing.T) {
	dir := testdir.Direct(t)
	src := writeTestFile(t, dir, "full.arrow", genOptions{batches: 3, rows: 200, compression: "lz4", seed: 31})
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(t, ioengine.Syscall, 16<<10, 1<<20)
	modes := []Options{
		{Mode: ModeMmap}, {Mode: ModePread},
		{Mode: ModeDirect, IOMode: ioengine.Syscall},
		{Mode: ModePool, Pool: pool},
	}
	for _, n := range truncations(len(data)) {
		path := filepath.Join(dir, fmt.Sprintf("cut-%d.arrow", n))
		if err := os.WriteFile(path, data[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		for _, o := range modes {
			f, err := Open(path, o)
			if err == nil {
				f.Close()
				t.Errorf("%s cut to %d of %d bytes: Open succeeded", o.Mode, n, len(data))
				continue
			}
			if !strings.Contains(err.Error(), path) || !errors.Is(err, ErrCorrupt) || !errors.Is(err, ringstore.ErrCorrupt) {
				t.Errorf("%s cut to %d bytes: %v, want a corrupt-file error naming %s", o.Mode, n, err, path)
			}
		}
		os.Remove(path)
	}
}

// TestBitFlips flips a bit in every byte of the footer, the trailer and the
// blocks' metadata (one random bit per byte), and bits at random in the
// bodies, and opens and scans the result in memory; a sample also goes
// through real files in every mode.
func TestBitFlips(t *testing.T) {
	dir := testdir.Direct(t)
	for _, comp := range []string{"", "zstd"} {
		src := writeTestFile(t, dir, "flip"+comp+".arrow", genOptions{batches: 2, rows: 60, compression: comp, seed: 41})
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Open(src, Options{Mode: ModePread})
		if err != nil {
			t.Fatal(err)
		}
		var targets []int // byte positions to damage
		for p := int(f.footer.Start); p < len(data); p++ {
			targets = append(targets, p)
		}
		blocks := append(f.DictionaryBlocks(), f.Blocks()...)
		for _, b := range blocks {
			for p := b.Offset; p < b.BodyOffset(); p++ {
				targets = append(targets, int(p))
			}
		}
		f.Close()
		rng := rand.New(rand.NewPCG(7, uint64(len(comp))))
		for _, b := range blocks {
			for k := 0; k < 40 && b.BodyLen > 0; k++ {
				targets = append(targets, int(b.BodyOffset()+rng.Int64N(b.BodyLen)))
			}
		}
		name := "flip" + comp + ".arrow"
		for _, p := range targets {
			bad := bytes.Clone(data)
			bad[p] ^= 1 << rng.IntN(8)
			checkCorruptResult(t, name, fmt.Sprintf("%s: bit flip at %d", comp, p), func() (*File, error) { return openBytes(name, bad) })
		}
		// A sample on disk in every mode.
		pool := newPool(t, ioengine.URing, 16<<10, 1<<20)
		for k := 0; k < 12; k++ {
			p := targets[rng.IntN(len(targets))]
			bad := bytes.Clone(data)
			bad[p] ^= 1 << rng.IntN(8)
			path := filepath.Join(dir, fmt.Sprintf("bad-%s-%d.arrow", comp, p))
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, o := range []Options{{Mode: ModeMmap}, {Mode: ModePread}, {Mode: ModeDirect, IOMode: ioengine.URing}, {Mode: ModePool, Pool: pool}} {
				checkCorruptResult(t, path, fmt.Sprintf("%s %s: bit flip at %d", o.Mode, comp, p), func() (*File, error) { return Open(path, o) })
			}
		}
	}
}

// TestCorruptErrors checks specific damage gives the error it should,
// naming what is wrong and where.
func TestCorruptErrors(t *testing.T) {
	dir := testdir.Direct(t)
	src := writeTestFile(t, dir, "c.arrow", genOptions{batches: 2, rows: 50, seed: 51})
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(src, Options{Mode: ModePread})
	if err != nil {
		t.Fatal(err)
	}
	blk := f.Blocks()[1]
	footStart := f.footer.Start
	// Where the footer's version (field 0 of its root table) lies: the root
	// table at the buffer's first uoffset, its vtable at table - soffset.
	raw := f.footer.raw
	table := int(binary.LittleEndian.Uint32(raw))
	vtable := table - int(int32(binary.LittleEndian.Uint32(raw[table:])))
	versionAt := int(footStart) + table + int(binary.LittleEndian.Uint16(raw[vtable+4:]))
	f.Close()
	le64 := func(b []byte, at int, v int64) {
		for i := 0; i < 8; i++ {
			b[at+i] = byte(v >> (8 * i))
		}
	}
	cases := []struct {
		name    string
		corrupt func(b []byte) []byte
		want    string
	}{
		{"leading magic", func(b []byte) []byte { b[0] = 'X'; return b }, "leading magic at offset 0"},
		{"trailing magic", func(b []byte) []byte { b[len(b)-1] = 'X'; return b }, "trailing magic"},
		{"footer length", func(b []byte) []byte { b[len(b)-10+3] = 0x7f; return b }, "footer length"},
		{"footer root", func(b []byte) []byte { le64(b, int(footStart), 1<<40); return b }, "footer"},
		{"not arrow", func(b []byte) []byte { return []byte("hello, this is not an arrow file at all") }, "not an Arrow IPC file"},
		{"metadata version", func(b []byte) []byte { b[versionAt], b[versionAt+1] = 2, 0; return b }, "metadata version V3 (2) not supported"},
		{"metadata prefix", func(b []byte) []byte { b[blk.Offset+4] ^= 0x10; return b }, "record batch 1 metadata"},
		{"body length", func(b []byte) []byte {
			// The Message's bodyLength no longer matches the footer.
			i := bytes.Index(b[blk.Offset:blk.BodyOffset()], le64Bytes(blk.BodyLen))
			if i < 0 {
				t.Fatal("body length not found in metadata")
			}
			b[blk.Offset+int64(i)] ^= 8
			return b
		}, "does not match the footer's body length"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := c.corrupt(bytes.Clone(data))
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".arrow")
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(path, Options{Mode: ModePread})
			if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want a corrupt-file error naming %s and %q", err, path, c.want)
			}
		})
	}
}

func le64Bytes(v int64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
	return b
}

var _ = arrow.Null

// TestInconsistentValues damages values that decode fine but would panic a
// reader: string offsets that go backwards and a dictionary index past the
// dictionary. The scan must stop with an error naming the column, in every
// mode, and TrustData must let the same file through (proving the check is
// what catches it).
func TestInconsistentValues(t *testing.T) {
	dir := testdir.Direct(t)
	src := writeTestFile(t, dir, "v.arrow", genOptions{batches: 1, rows: 100, seed: 61})
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(src, Options{Mode: ModePread})
	if err != nil {
		t.Fatal(err)
	}
	bm := f.batches[0]
	base := f.footer.RecordBatches[0].BodyOffset()
	field := func(name string) fieldSpan { return bm.fields[f.byName[name]] }
	f.Close()
	pool := newPool(t, ioengine.Syscall, 16<<10, 1<<20)
	cases := []struct {
		column string
		damage func(b []byte)
		want   string
	}{
		{"name", func(b []byte) {
			offs := bm.buffers[field("name").buf0+1] // validity, offsets, data
			p := base + offs.offset + 4*50
			copy(b[p:p+4], le64Bytes(1)[:4]) // offset 50 becomes 1
		}, "decrease"},
		{"country", func(b []byte) {
			idx := bm.buffers[field("country").buf0+1] // validity, int16 indices
			p := base + idx.offset + 2*7
			b[p], b[p+1] = 0xe8, 0x03 // index 1000
		}, "outside dictionary"},
	}
	for _, c := range cases {
		bad := bytes.Clone(data)
		c.damage(bad)
		path := filepath.Join(dir, "bad-"+c.column+".arrow")
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, o := range []Options{{Mode: ModeMmap}, {Mode: ModePread}, {Mode: ModeDirect}, {Mode: ModePool, Pool: pool}} {
			f, err := Open(path, o)
			if err != nil {
				t.Fatal(err)
			}
			err = consume(f, []string{c.column})
			if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `"`+c.column+`"`) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "record batch 0") {
				t.Errorf("%s %s: %v, want a corrupt-file error naming record batch 0, column %q and %q", o.Mode, c.column, err, c.column, c.want)
			}
			if err := f.Close(); err != nil {
				t.Errorf("%s: Close: %v", o.Mode, err)
			}
		}
		// Without the check the scan "succeeds" (and reading the values
		// would panic).
		o := Options{Mode: ModePread, TrustData: true}
		f, err := Open(path, o)
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.Scan([]string{c.column})
		if err != nil {
			t.Fatal(err)
		}
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			t.Errorf("TrustData %s: %v", c.column, err)
		}
		s.Close()
		f.Close()
	}
}
