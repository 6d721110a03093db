package arrowscan

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// testMode is one way of opening files in the tests.
type testMode struct {
	name string
	opts func(t testing.TB) Options
}

// newEngine returns an engine on the asked-for backend, closed at cleanup
// (testengine.New: skips only where io_uring is refused outright).
func newEngine(t testing.TB, mode ioengine.IOMode) *ioengine.Engine {
	t.Helper()
	return testengine.New(t, mode, ioengine.Options{})
}

// newPool makes a pool as PoolOptions sets one up (with windows on Linux),
// closed at cleanup.
func newPool(t testing.TB, mode ioengine.IOMode, frame int, budget int64) *bufpool.Pool {
	t.Helper()
	return newPoolOptions(t, PoolOptions(bufpool.Options{FrameSize: frame, Budget: budget, Engine: newEngine(t, mode)}))
}

func newPoolOptions(t testing.TB, o bufpool.Options) *bufpool.Pool {
	t.Helper()
	o.Logf = t.Logf
	p, err := bufpool.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("pool close: %v", err)
		}
	})
	return p
}

func allModes() []testMode {
	return []testMode{
		{"mmap", func(t testing.TB) Options { return Options{Mode: ModeMmap} }},
		{"pread", func(t testing.TB) Options { return Options{Mode: ModePread} }},
		{"direct-uring", func(t testing.TB) Options {
			return Options{Mode: ModeDirect, Engine: newEngine(t, ioengine.URing)}
		}},
		{"direct-syscall", func(t testing.TB) Options { return Options{Mode: ModeDirect, IOMode: ioengine.Syscall} }},
		{"direct-uring-noprefetch", func(t testing.TB) Options {
			return Options{Mode: ModeDirect, IOMode: ioengine.URing, Prefetch: -1}
		}},
		{"pool-uring-16k", func(t testing.TB) Options {
			return Options{Mode: ModePool, Pool: newPool(t, ioengine.URing, 16<<10, 2<<20)}
		}},
		{"pool-syscall-256k", func(t testing.TB) Options {
			return Options{Mode: ModePool, Pool: newPool(t, ioengine.Syscall, 256<<10, 8<<20), Prefetch: 4}
		}},
		{"pool-uring-16k-nowindows", func(t testing.TB) Options {
			o := bufpool.Options{FrameSize: 16 << 10, Budget: 2 << 20, Engine: newEngine(t, ioengine.URing)}
			return Options{Mode: ModePool, Pool: newPoolOptions(t, o)}
		}},
	}
}

// projections tried on the test schema.
var projections = [][]string{
	nil,
	{"id"}, {"price"}, {"ts"}, {"name"}, {"flag"}, {"country"}, {"maybe"}, {"tags"}, {"point"},
	{"point", "id", "country", "name"},
	{"maybe", "tags", "price"},
}

// checkScan scans path in opts with columns and compares every record with
// arrow-go's FileReader's (ref), column by column.
func checkScan(t *testing.T, path string, opts Options, columns []string, ref []arrow.RecordBatch) {
	t.Helper()
	f, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	if err := scanEqual(f, columns, ref); err != nil {
		t.Fatal(err)
	}
}

// scanEqual scans f and compares with ref; it is safe to call from many
// goroutines.
func scanEqual(f *File, columns []string, ref []arrow.RecordBatch) error {
	s, err := f.Scan(columns)
	if err != nil {
		return fmt.Errorf("Scan(%v): %w", columns, err)
	}
	defer s.Close()
	refSchema := ref[0].Schema()
	idx := make([]int, 0, len(columns))
	if len(columns) == 0 {
		for i := 0; i < refSchema.NumFields(); i++ {
			idx = append(idx, i)
		}
	} else {
		for _, c := range columns {
			is := refSchema.FieldIndices(c)
			if len(is) != 1 {
				return fmt.Errorf("reference has %d fields %q", len(is), c)
			}
			idx = append(idx, is[0])
		}
	}
	n := 0
	for s.Next() {
		rec := s.Record()
		if n >= len(ref) {
			return fmt.Errorf("%v: more records than the reference's %d", columns, len(ref))
		}
		want := ref[n]
		if rec.NumRows() != want.NumRows() || int(rec.NumCols()) != len(idx) {
			return fmt.Errorf("%v: batch %d: %d rows × %d cols, want %d × %d", columns, n, rec.NumRows(), rec.NumCols(), want.NumRows(), len(idx))
		}
		for j, k := range idx {
			gf, wf := rec.Schema().Field(j), refSchema.Field(k)
			if gf.Name != wf.Name || !arrow.TypeEqual(gf.Type, wf.Type) || gf.Nullable != wf.Nullable {
				return fmt.Errorf("%v: batch %d: field %d is %v, want %v", columns, n, j, gf, wf)
			}
			if !array.Equal(rec.Column(j), want.Column(k)) {
				return fmt.Errorf("%v: batch %d: column %q differs:\n got %v\nwant %v", columns, n, wf.Name, rec.Column(j), want.Column(k))
			}
		}
		if !rec.Schema().Metadata().Equal(refSchema.Metadata()) {
			return fmt.Errorf("%v: schema metadata %v, want %v", columns, rec.Schema().Metadata(), refSchema.Metadata())
		}
		n++
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("%v: after %d batches: %w", columns, n, err)
	}
	if n != len(ref) {
		return fmt.Errorf("%v: %d batches, want %d", columns, n, len(ref))
	}
	return s.Close()
}

func TestModesEqualArrowGo(t *testing.T) {
	dir := testdir.Direct(t)
	files := []struct {
		name string
		o    genOptions
	}{
		{"plain", genOptions{batches: 5, rows: 700, seed: 1}},
		{"lz4", genOptions{batches: 4, rows: 900, compression: "lz4", seed: 2}},
		{"zstd", genOptions{batches: 4, rows: 900, compression: "zstd", seed: 3}},
		{"views", genOptions{batches: 3, rows: 500, views: true, seed: 5}},
		{"one-row", genOptions{batches: 2, rows: 1, seed: 6}},
	}
	for _, tf := range files {
		path := writeTestFile(t, dir, tf.name+".arrow", tf.o)
		ref := referenceRecords(t, path)
		for _, m := range allModes() {
			t.Run(tf.name+"/"+m.name, func(t *testing.T) {
				opts := m.opts(t)
				cols := projections
				if tf.o.views {
					cols = append(cols, []string{"note"}, []string{"note", "id"})
				}
				for _, c := range cols {
					checkScan(t, path, opts, c, ref)
				}
			})
		}
	}
}

func TestPoolZeroCopyOffEqual(t *testing.T) {
	dir := testdir.Direct(t)
	path := writeTestFile(t, dir, "z.arrow", genOptions{batches: 4, rows: 200, seed: 9})
	ref := referenceRecords(t, path)
	poolZeroCopy = false
	defer func() { poolZeroCopy = true }()
	opts := Options{Mode: ModePool, Pool: newPool(t, ioengine.URing, 256<<10, 4<<20)}
	for _, c := range projections {
		checkScan(t, path, opts, c, ref)
	}
}

// TestPoolWindowRefusedEqual: when the pool cannot show a batch's frames
// as one range, the batch is copied out instead, with the same records and
// no frame left pinned.
func TestPoolWindowRefusedEqual(t *testing.T) {
	dir := testdir.Direct(t)
	path := writeTestFile(t, dir, "w.arrow", genOptions{batches: 4, rows: 200, seed: 11})
	ref := referenceRecords(t, path)
	old := poolWindows
	poolWindows = func(*bufpool.Pool) bool { return true } // a pool without windows refuses every Window
	defer func() { poolWindows = old }()
	pool := newPoolOptions(t, bufpool.Options{FrameSize: 16 << 10, Budget: 2 << 20, Engine: newEngine(t, ioengine.URing)})
	for _, c := range projections {
		checkScan(t, path, Options{Mode: ModePool, Pool: pool}, c, ref)
	}
	if st := pool.Stats(); st.Pinned != 0 {
		t.Errorf("%d frames still pinned after the scans", st.Pinned)
	}
}

// TestConcurrentScansSmallPool runs many scanners of several files at once
// on one pool far smaller than the data, so frames are evicted under them.
func TestConcurrentScansSmallPool(t *testing.T) {
	dir := testdir.Direct(t)
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		t.Run(mode.String(), func(t *testing.T) {
			pool := newPool(t, mode, 16<<10, 512<<10) // 32 frames
			var files []*File
			var refs [][]arrow.RecordBatch
			for i := 0; i < 3; i++ {
				path := writeTestFile(t, dir, fmt.Sprintf("c%d-%s.arrow", i, mode), genOptions{batches: 6, rows: 800, compression: []string{"", "lz4", "zstd"}[i], seed: uint64(10 + i)})
				ref := referenceRecords(t, path)
				f, err := Open(path, Options{Mode: ModePool, Pool: pool, Prefetch: 3})
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				files = append(files, f)
				refs = append(refs, ref)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for g := 0; g < 12; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for round := 0; round < 2; round++ {
						k := (g + round) % len(files)
						cols := projections[(g*3+round)%len(projections)]
						if err := scanEqual(files[k], cols, refs[k]); err != nil {
							errs <- fmt.Errorf("scanner %d file %d: %w", g, k, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			st := pool.Stats()
			t.Logf("pool: %+v", st)
			if st.Evictions == 0 {
				t.Errorf("no evictions: the test did not put the pool under pressure (%+v)", st)
			}
			if st.Pinned != 0 {
				t.Errorf("%d frames still pinned after every scan closed", st.Pinned)
			}
			if st.Announced == 0 || st.OpenAnnouncements != 0 {
				t.Errorf("scans announced %d frames and left %d announcements open; want some, and none open", st.Announced, st.OpenAnnouncements)
			}
		})
	}
}

// TestPoolScanClosedEarlyRetracts: a pool scan announces the frames of
// every batch it will read; one closed after its first batch retracts the
// rest, so no frame stays out of the eviction hand's reach.
func TestPoolScanClosedEarlyRetracts(t *testing.T) {
	dir := testdir.Direct(t)
	pool := newPool(t, ioengine.URing, 16<<10, 2<<20)
	path := writeTestFile(t, dir, "early.arrow", genOptions{batches: 6, rows: 800, seed: 7})
	f, err := Open(path, Options{Mode: ModePool, Pool: pool, Prefetch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := f.Scan([]string{"id", "name"})
	if err != nil {
		t.Fatal(err)
	}
	st := pool.Stats()
	if st.OpenAnnouncements == 0 || st.Misses != 0 {
		t.Fatalf("a scan not yet started: %s; want announcements open and nothing pinned", st)
	}
	if !s.Next() {
		t.Fatalf("no first batch: %v", s.Err())
	}
	if open := pool.Stats().OpenAnnouncements; open >= st.OpenAnnouncements {
		t.Errorf("after the first batch %d announcements open, before it %d: its Pin met none", open, st.OpenAnnouncements)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st := pool.Stats(); st.OpenAnnouncements != 0 || st.Pinned != 0 {
		t.Errorf("after Close of a scan one batch in: %s; want no announcement open, nothing pinned", st)
	}
}

func TestConcurrentScansDirect(t *testing.T) {
	dir := testdir.Direct(t)
	path := writeTestFile(t, dir, "d.arrow", genOptions{batches: 8, rows: 600, compression: "lz4", seed: 21})
	ref := referenceRecords(t, path)
	eng := newEngine(t, ioengine.URing)
	f, err := Open(path, Options{Mode: ModeDirect, Engine: eng, Prefetch: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := scanEqual(f, projections[g%len(projections)], ref); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestScanErrors(t *testing.T) {
	dir := testdir.Direct(t)
	path := writeTestFile(t, dir, "e.arrow", genOptions{batches: 1, rows: 10, seed: 1})
	f, err := Open(path, Options{Mode: ModePread})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Scan([]string{"id", "nope"})
	if err == nil || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), path) {
		t.Errorf("unknown column: %v, want an error naming the column and the file", err)
	}
	if _, err := f.Scan([]string{"id", "id"}); err == nil {
		t.Errorf("duplicate column: no error")
	}
	s, err := f.Scan(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err == nil {
		t.Errorf("Close with an open scanner: no error")
	}
	s.Close()
}

func TestOptionsErrors(t *testing.T) {
	for _, o := range []Options{{}, {Mode: 9}, {Mode: ModePool}, {Mode: ModeDirect, IOMode: 17}} {
		if _, err := Open("/nonexistent", o); err == nil || !strings.Contains(err.Error(), "arrowscan") {
			t.Errorf("Open with %s: %v", o.String(), err)
		}
	}
	if _, err := ParseMode("mmapp"); err == nil || !strings.Contains(err.Error(), "mmap, pread, direct, pool") {
		t.Errorf("ParseMode: %v", err)
	}
	for m := ModeMmap; m <= ModePool; m++ {
		if got, err := ParseMode(m.String()); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), got, err)
		}
	}
}

// TestEmptyFile: a file with a schema and no record batches scans to a
// clean end in every mode.
func TestEmptyFile(t *testing.T) {
	dir := testdir.Direct(t)
	path := writeTestFile(t, dir, "empty.arrow", genOptions{batches: 0, seed: 1})
	for _, m := range allModes() {
		t.Run(m.name, func(t *testing.T) {
			f, err := Open(path, m.opts(t))
			if err != nil {
				t.Fatal(err)
			}
			if f.NumRecordBatches() != 0 || f.NumRows() != 0 || f.Schema().NumFields() != testSchema(false).NumFields() {
				t.Errorf("%d batches, %d rows, %d fields", f.NumRecordBatches(), f.NumRows(), f.Schema().NumFields())
			}
			s, err := f.Scan([]string{"country", "id"})
			if err != nil {
				t.Fatal(err)
			}
			if s.Next() || s.Err() != nil || s.Record() != nil {
				t.Errorf("Next on an empty file: err %v", s.Err())
			}
			if got := s.Schema().Field(0).Name; got != "country" {
				t.Errorf("schema field 0 is %q", got)
			}
			s.Close()
			s.Close()
			if err := f.Close(); err != nil {
				t.Error(err)
			}
			if err := f.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if _, err := f.Scan(nil); !errors.Is(err, ErrClosed) {
				t.Errorf("Scan after Close: %v", err)
			}
		})
	}
}
