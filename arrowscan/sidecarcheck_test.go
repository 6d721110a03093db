package arrowscan_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/arrowscan"
	"github.com/ringstore/ringstore/arrowscan/events"
	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// checkModes are the ways a File reads, each on the real kernel ring where
// it has one: every one must check what it reads against the sidecar.
func checkModes() []struct {
	name string
	opts func(t testing.TB) arrowscan.Options
} {
	pool := func(t testing.TB, mode ioengine.IOMode, frame int, windows bool) *bufpool.Pool {
		o := bufpool.Options{FrameSize: frame, Budget: 2 << 20, Engine: testengine.New(t, mode, ioengine.Options{}), Logf: t.Logf}
		if windows {
			o = arrowscan.PoolOptions(o)
		}
		p, err := bufpool.New(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	return []struct {
		name string
		opts func(t testing.TB) arrowscan.Options
	}{
		{"mmap", func(testing.TB) arrowscan.Options { return arrowscan.Options{Mode: arrowscan.ModeMmap} }},
		{"pread", func(testing.TB) arrowscan.Options { return arrowscan.Options{Mode: arrowscan.ModePread} }},
		{"direct-uring", func(t testing.TB) arrowscan.Options {
			return arrowscan.Options{Mode: arrowscan.ModeDirect, Engine: testengine.New(t, ioengine.URing, ioengine.Options{})}
		}},
		{"direct-syscall", func(testing.TB) arrowscan.Options {
			return arrowscan.Options{Mode: arrowscan.ModeDirect, IOMode: ioengine.Syscall}
		}},
		{"pool-uring-16k", func(t testing.TB) arrowscan.Options {
			return arrowscan.Options{Mode: arrowscan.ModePool, Pool: pool(t, ioengine.URing, 16<<10, true)}
		}},
		{"pool-syscall-256k-nowindows", func(t testing.TB) arrowscan.Options {
			return arrowscan.Options{Mode: arrowscan.ModePool, Pool: pool(t, ioengine.Syscall, 256<<10, false)}
		}},
	}
}

// scanAll opens path, scans every column and returns its records,
// retained, or the first error. Only for ModePread, whose records outlive
// their File.
func scanAll(path string, opts arrowscan.Options) ([]arrow.RecordBatch, error) {
	var recs []arrow.RecordBatch
	_, err := scanDiff(path, opts, func(r arrow.RecordBatch) {
		r.Retain()
		recs = append(recs, r)
	})
	if err != nil {
		release(recs)
		return nil, err
	}
	return recs, nil
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// scanDiff opens path, scans every column, hands each record to each (if
// not nil) and compares it with ref (if not nil), before the File closes.
// It returns whether the records differ from ref, and the first error.
func scanDiff(path string, opts arrowscan.Options, each func(arrow.RecordBatch), ref ...arrow.RecordBatch) (bool, error) {
	f, err := arrowscan.Open(path, opts)
	if err != nil {
		return false, err
	}
	s, err := f.Scan(nil)
	if err != nil {
		f.Close()
		return false, err
	}
	n, differ := 0, false
	for s.Next() {
		r := s.Record()
		if each != nil {
			each(r)
		}
		if ref != nil && (n >= len(ref) || !array.RecordEqual(r, ref[n])) {
			differ = true
		}
		n++
	}
	err = s.Err()
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return differ || ref != nil && n != len(ref), err
}

// scanOnce scans every column of path and returns the error.
func scanOnce(path string, opts arrowscan.Options) error {
	_, err := scanDiff(path, opts, nil)
	return err
}

// flip xors the byte at off of the file at path with x.
func flip(t *testing.T, path string, off int64, x byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= x
	if _, err := f.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

// wantChunkError: err is a *CorruptError (ringstore.ErrCorrupt) naming
// path and the offset of the chunk holding the byte at off.
func wantChunkError(t *testing.T, what string, err error, path string, off int64) {
	t.Helper()
	var ce *arrowscan.CorruptError
	chunk := off &^ (arrowscan.SidecarChunkSize - 1)
	if !errors.As(err, &ce) || !errors.Is(err, ringstore.ErrCorrupt) || ce.Path != path || ce.Offset != chunk ||
		!strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprintf("at offset %d", chunk)) ||
		!strings.Contains(err.Error(), "its checksum sidecar says") {
		t.Fatalf("%s: %v, want a *CorruptError naming %s and the chunk at offset %d", what, err, path, chunk)
	}
}

// TestSidecarCheckedInEveryMode: a byte flipped in a batch's body, in the
// footer or in a message's metadata is, in every mode, a corruption error
// naming the file and the offset of the chunk that holds it, never a
// result; with SkipSidecarCheck the body flip reads as before (a different
// value, no error).
func TestSidecarCheckedInEveryMode(t *testing.T) {
	path := genWithSidecar(t)
	st, _ := os.Stat(path)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ft, err := arrowscan.ParseFooter(f, st.Size(), path)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := scanAll(path, arrowscan.Options{Mode: arrowscan.ModePread, SkipSidecarCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer release(ref)
	b := ft.RecordBatches[3]
	damages := []struct {
		name string
		off  int64
	}{
		{"body", b.BodyOffset() + b.BodyLen/2},
		{"footer", ft.Start + (st.Size()-ft.Start)/3},
		{"message metadata", ft.RecordBatches[1].Offset + 12},
	}
	for _, m := range checkModes() {
		t.Run(m.name, func(t *testing.T) {
			opts := m.opts(t)
			if differ, err := scanDiff(path, opts, nil, ref...); err != nil || differ {
				t.Fatalf("the intact file: %v (values differ: %v)", err, differ)
			}
			for _, d := range damages {
				flip(t, path, d.off, 0x10)
				err := scanOnce(path, opts)
				flip(t, path, d.off, 0x10)
				wantChunkError(t, d.name, err, path, d.off)
			}
			// The body flip, unchecked: the values change, nothing fails.
			d := damages[0]
			flip(t, path, d.off, 0x10)
			skip := opts
			skip.SkipSidecarCheck = true
			differ, err := scanDiff(path, skip, nil, ref...)
			flip(t, path, d.off, 0x10)
			if err != nil || !differ {
				t.Fatalf("the body flip without the check: %v (values differ: %v), want a scan that succeeds with different values", err, differ)
			}
		})
	}
}

// TestSidecarManyCorruptCopies reproduces the count: copies of a
// file each with one byte flipped, at offsets across the whole file. In
// every mode no checked scan succeeds with values other than the intact
// file's; without the check some do (that is what the check is for).
func TestSidecarManyCorruptCopies(t *testing.T) {
	paths, err := events.Generate(t.TempDir(), events.GenOptions{Rows: 3000, RowsPerBatch: 1000, Seed: 5, Sidecar: true})
	if err != nil {
		t.Fatal(err)
	}
	path := paths[0]
	st, _ := os.Stat(path)
	ref, err := scanAll(path, arrowscan.Options{Mode: arrowscan.ModePread})
	if err != nil {
		t.Fatal(err)
	}
	defer release(ref)
	n := 300
	if testing.Short() {
		n = 60
	}
	rng := rand.New(rand.NewPCG(31, uint64(st.Size())))
	offs := make([]int64, n)
	for i := range offs {
		offs[i] = int64(i)*st.Size()/int64(n) + rng.Int64N(max(1, st.Size()/int64(n)))
	}
	for _, m := range checkModes() {
		t.Run(m.name, func(t *testing.T) {
			opts := m.opts(t)
			skip := opts
			skip.SkipSidecarCheck = true
			var failed, same, wrongUnchecked int
			for _, off := range offs {
				x := byte(1) << rng.IntN(8)
				flip(t, path, off, x)
				differ, err := scanDiff(path, opts, nil, ref...)
				wrong := err == nil && differ
				if udiffer, uerr := scanDiff(path, skip, nil, ref...); uerr == nil && udiffer {
					wrongUnchecked++
				}
				flip(t, path, off, x)
				switch {
				case wrong:
					t.Fatalf("byte %d flipped (^%#x): the checked scan succeeded with different values", off, x)
				case err != nil:
					failed++
					wantChunkError(t, fmt.Sprintf("byte %d flipped", off), err, path, off)
				default:
					same++ // a byte no scan reads (the schema message at the start)
				}
			}
			t.Logf("%d flipped copies: %d failed naming the chunk, %d read the same values (bytes no scan reads); unchecked, %d gave different values without an error",
				n, failed, same, wrongUnchecked)
			if wrongUnchecked == 0 {
				t.Errorf("no flipped copy gave different values without the check: the test does not exercise it")
			}
			if same > n/10 {
				t.Errorf("%d of %d flips went unnoticed with the same values: the scans read less of the file than expected", same, n)
			}
		})
	}
}

// TestSidecarMismatch: a sidecar of another size is an error naming the
// file and the sidecar; a format 1 sidecar cannot check scans and says so;
// no sidecar reads as before.
func TestSidecarMismatch(t *testing.T) {
	path := genWithSidecar(t)
	side := path + arrowscan.SidecarSuffix
	raw, _ := os.ReadFile(side)
	s, err := arrowscan.DecodeSidecar(raw, side)
	if err != nil {
		t.Fatal(err)
	}
	opts := arrowscan.Options{Mode: arrowscan.ModePread}
	other := s
	other.FileSize += arrowscan.SidecarChunkSize
	other.Chunks = append(other.Chunks[:len(other.Chunks):len(other.Chunks)], 0)
	os.WriteFile(side, arrowscan.EncodeSidecar(other), 0o644)
	if err := scanOnce(path, opts); !errors.Is(err, ringstore.ErrCorrupt) || !strings.Contains(err.Error(), side) ||
		!strings.Contains(err.Error(), fmt.Sprintf("%d bytes", s.FileSize)) || !strings.Contains(err.Error(), fmt.Sprintf("%d bytes", other.FileSize)) {
		t.Errorf("a sidecar of another size: %v", err)
	}
	v1 := s
	v1.ChunkSize, v1.Chunks = 0, nil
	os.WriteFile(side, arrowscan.EncodeSidecar(v1), 0o644)
	if err := scanOnce(path, opts); !errors.Is(err, arrowscan.ErrBadOptions) || !strings.Contains(err.Error(), "format 1") || !strings.Contains(err.Error(), side) {
		t.Errorf("a format 1 sidecar: %v", err)
	}
	if _, err := arrowscan.VerifySidecar(path); err != nil {
		t.Errorf("VerifySidecar of a format 1 sidecar: %v", err)
	}
	opts.SkipSidecarCheck = true
	if err := scanOnce(path, opts); err != nil {
		t.Errorf("a format 1 sidecar, unchecked: %v", err)
	}
	os.Remove(side)
	f, err := arrowscan.Open(path, arrowscan.Options{Mode: arrowscan.ModePread})
	if err != nil || f.SidecarChecked() {
		t.Fatalf("no sidecar: %v, checked %v", err, f != nil && f.SidecarChecked())
	}
	f.Close()
	os.WriteFile(side, raw, 0o644)
	if f, err = arrowscan.Open(path, arrowscan.Options{Mode: arrowscan.ModePread}); err != nil || !f.SidecarChecked() {
		t.Fatalf("the sidecar back: %v", err)
	}
	f.Close()
}

// TestPoolChecksWhatEachScanReads: a pool checks the chunks a scan's
// projected ranges cover, not the whole frame. With a byte flipped in one
// column of a file that lies in one frame, a scan of another column
// succeeds with the intact values, a scan of the damaged column in the
// same pool (the frame resident, partly checked) fails naming the chunk,
// and the first scan still succeeds after it.
func TestPoolChecksWhatEachScanReads(t *testing.T) {
	paths, err := events.Generate(t.TempDir(), events.GenOptions{Rows: 40_000, RowsPerBatch: 20_000, Seed: 9, Sidecar: true})
	if err != nil {
		t.Fatal(err)
	}
	path := paths[0]
	newPool := func() *bufpool.Pool {
		p, err := bufpool.New(arrowscan.PoolOptions(bufpool.Options{FrameSize: 4 << 20, Budget: 32 << 20, Engine: testengine.New(t, ioengine.URing, ioengine.Options{}), Logf: t.Logf}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	scan := func(p *bufpool.Pool, col string) ([]arrow.RecordBatch, error) {
		f, err := arrowscan.Open(path, arrowscan.Options{Mode: arrowscan.ModePool, Pool: p})
		if err != nil {
			return nil, err
		}
		defer f.Close()
		s, err := f.Scan([]string{col})
		if err != nil {
			return nil, err
		}
		var recs []arrow.RecordBatch
		for s.Next() {
			r := s.Record()
			r.Retain()
			recs = append(recs, r)
		}
		err = s.Err()
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		return recs, err
	}
	cols := []string{events.ColCustomerID, events.ColSessionID, events.ColBytes, events.ColLatencyMS}
	refs := map[string][]arrow.RecordBatch{}
	for _, c := range cols {
		recs, err := scan(newPool(), c)
		if err != nil {
			t.Fatalf("intact file, column %s: %v", c, err)
		}
		refs[c] = recs
		defer release(recs)
	}
	st, _ := os.Stat(path)
	ft, err := func() (*arrowscan.Footer, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return arrowscan.ParseFooter(f, st.Size(), path)
	}()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 4<<20 {
		t.Fatalf("the file is %d bytes, more than a frame", st.Size())
	}
	b := ft.RecordBatches[1]
	// The middle of the second column (customer_id), after the 8-byte
	// timestamps of the batch's 20,000 rows.
	off := b.BodyOffset() + 20_000*8 + 20_000*8/2
	flip(t, path, off, 0x40)
	defer flip(t, path, off, 0x40)
	var good, bad []string
	for _, c := range cols {
		if _, err := scan(newPool(), c); err != nil {
			wantChunkError(t, "column "+c, err, path, off)
			bad = append(bad, c)
		} else {
			good = append(good, c)
		}
	}
	if len(good) == 0 || len(bad) == 0 {
		t.Fatalf("the flip at offset %d: scans of %v failed, of %v succeeded; the test needs both", off, bad, good)
	}
	p := newPool()
	for _, round := range []string{"before", "after"} {
		recs, err := scan(p, good[0])
		if err != nil {
			t.Fatalf("column %s, %s a scan of %s in the same pool: %v", good[0], round, bad[0], err)
		}
		for i, r := range recs {
			if !array.RecordEqual(r, refs[good[0]][i]) {
				t.Fatalf("column %s, batch %d: values differ from the intact file's", good[0], i)
			}
		}
		release(recs)
		if round == "before" {
			_, err := scan(p, bad[0])
			wantChunkError(t, "column "+bad[0]+" in a pool holding its frame", err, path, off)
		}
	}
}
