package events

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ringstore/ringstore/arrowscan"
)

// GenOptions says what Generate writes. The zero value of every field but
// Rows is safe and means its default.
type GenOptions struct {
	// Rows is the number of events of the whole data set (required, ≥ 1).
	Rows int64
	// RowsPerBatch is the length of a record batch; default 65536.
	RowsPerBatch int
	// Files is how many files the rows are split over, in time order;
	// default 1, or Rows/RowsPerFile rounded up when RowsPerFile is set.
	// Setting both is an error.
	Files int
	// RowsPerFile, when set, sets Files.
	RowsPerFile int64
	// Compression of the record batch bodies: "" or "none", "lz4", "zstd".
	Compression string
	// Seed makes the data: the same Seed, Rows, Customers, Start and Span
	// give the same rows, however they are cut into files and batches.
	Seed int64
	// Customers is the number of distinct customers (Zipf-skewed);
	// default 100000, at most 1000002.
	Customers int
	// Start is the time of the first event; default 2024-06-01T00:00:00Z.
	Start time.Time
	// Span is the time the data set covers; default 24h, at least 1µs.
	Span time.Duration
	// Workers is how many files are generated at once; default GOMAXPROCS.
	Workers int
	// Sidecar also writes each file's checksum sidecar (FILE.crc,
	// arrowscan.WriteSidecar), once the file is durable, so that
	// arrowscan.VerifySidecar can check every byte of it later: Arrow IPC
	// has no checksums of its own.
	Sidecar bool
}

// Defaults of GenOptions.
const (
	DefaultRowsPerBatch = 64 << 10
	DefaultCustomers    = 100_000
	DefaultSpan         = 24 * time.Hour
)

// DefaultStart is the default GenOptions.Start.
var DefaultStart = time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)

// String shows the options with defaults filled in.
func (o GenOptions) String() string {
	d, err := o.withDefaults()
	if err != nil {
		return fmt.Sprintf("invalid GenOptions (%v)", err)
	}
	return fmt.Sprintf("rows=%d rows_per_batch=%d files=%d compression=%s seed=%d customers=%d start=%s span=%s workers=%d",
		d.Rows, d.RowsPerBatch, d.Files, d.Compression, d.Seed, d.Customers, d.Start.Format(time.RFC3339), d.Span, d.Workers)
}

// withDefaults fills in defaults and checks every field; it is the one
// place defaults are decided.
func (o GenOptions) withDefaults() (GenOptions, error) {
	bad := func(format string, args ...any) (GenOptions, error) {
		return GenOptions{}, fmt.Errorf("%w: "+format, append([]any{ErrBadOptions}, args...)...)
	}
	if o.Rows < 1 {
		return bad("Rows must be at least 1, got %d", o.Rows)
	}
	if o.RowsPerBatch < 0 {
		return bad("RowsPerBatch must not be negative, got %d", o.RowsPerBatch)
	}
	if o.RowsPerBatch == 0 {
		o.RowsPerBatch = DefaultRowsPerBatch
	}
	if o.Files < 0 || o.RowsPerFile < 0 {
		return bad("Files and RowsPerFile must not be negative, got %d and %d", o.Files, o.RowsPerFile)
	}
	switch {
	case o.Files > 0 && o.RowsPerFile > 0:
		return bad("set Files (%d) or RowsPerFile (%d), not both", o.Files, o.RowsPerFile)
	case o.RowsPerFile > 0:
		files := (o.Rows + o.RowsPerFile - 1) / o.RowsPerFile
		if files > 1_000_000 {
			return bad("RowsPerFile %d makes %d files, more than 1000000", o.RowsPerFile, files)
		}
		o.Files, o.RowsPerFile = int(files), 0
	case o.Files == 0:
		o.Files = 1
	}
	if int64(o.Files) > o.Rows {
		return bad("Files (%d) must not exceed Rows (%d): every file holds at least one row", o.Files, o.Rows)
	}
	if o.Files > 1_000_000 {
		return bad("Files must be at most 1000000, got %d", o.Files)
	}
	switch c := strings.ToLower(o.Compression); c {
	case "", "none":
		o.Compression = "none"
	case "lz4", "zstd":
		o.Compression = c
	default:
		return bad("unknown Compression %q (none, lz4 or zstd)", o.Compression)
	}
	if o.Customers < 0 || o.Customers > maxCustomers {
		return bad("Customers must be between 1 and %d, got %d", maxCustomers, o.Customers)
	}
	if o.Customers == 0 {
		o.Customers = DefaultCustomers
	}
	if o.Start.IsZero() {
		o.Start = DefaultStart
	}
	if o.Span < 0 {
		return bad("Span must be positive, got %s", o.Span)
	}
	if o.Span == 0 {
		o.Span = DefaultSpan
	}
	if o.Span < time.Microsecond {
		return bad("Span must be at least 1µs, got %s", o.Span)
	}
	if y := o.Start.Add(o.Span).Year(); o.Start.Year() < 1 || y > 9999 || o.Start.Add(o.Span).Before(o.Start) {
		return bad("Start %s + Span %s leaves the years 1–9999", o.Start.Format(time.RFC3339), o.Span)
	}
	if o.Workers < 0 {
		return bad("Workers must not be negative, got %d", o.Workers)
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Workers > o.Files {
		o.Workers = o.Files
	}
	return o, nil
}

// FileName returns the name of file i of a data set: events-000000.arrow.
func FileName(i int) string { return fmt.Sprintf("events-%06d.arrow", i) }

// Generate writes the data set opts describes into dir (created if
// missing) as Arrow IPC files named FileName(0), FileName(1), … and returns
// their paths in time order. Each file is written under a temporary name,
// fsynced and renamed; the directory is fsynced at the end. A crash leaves
// complete files or temporary ones (".events-*.tmp"), never a half file
// under a final name. Files of the same names are replaced; other files in
// dir are left alone.
func Generate(dir string, opts GenOptions) ([]string, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("events: generate: %w", err)
	}
	paths := make([]string, o.Files)
	for i := range paths {
		paths[i] = filepath.Join(dir, FileName(i))
	}
	errs := make([]error, o.Files)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < o.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := newRowGen(o)
			var bs [2]batchBuilder
			for f := range next {
				errs[f] = writeFile(paths[f], o, f, g, &bs)
			}
		}()
	}
	for f := range paths {
		next <- f
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	return paths, nil
}

// fileRows returns the first row of file f and the first row after it.
func fileRows(o GenOptions, f int) (first, end uint64) {
	return uint64(mulDiv(uint64(o.Rows), uint64(f), uint64(o.Files))),
		uint64(mulDiv(uint64(o.Rows), uint64(f+1), uint64(o.Files)))
}

// filledBatch is a batch a producer has drawn, on its way to the writer.
type filledBatch struct {
	b        *batchBuilder
	row, end uint64
}

// produceBatches draws rows [first, end) into the builders in turn, in
// batches of o.RowsPerBatch, and sends them to ready, which it closes at the
// end; a builder is reused when the writer hands it back on free. It stops
// early when done is closed.
func produceBatches(o GenOptions, g *rowGen, first, end uint64, free <-chan *batchBuilder, ready chan<- filledBatch, done <-chan struct{}) {
	defer close(ready)
	for row := first; row < end; {
		var b *batchBuilder
		select {
		case b = <-free:
		case <-done:
			return
		}
		n := min(uint64(o.RowsPerBatch), end-row)
		g.fill(b, row, int(n))
		select {
		case ready <- filledBatch{b, row, row + n}:
		case <-done:
			return
		}
		row += n
	}
}

// writeFile writes file f of the data set to path through a temporary file.
// One goroutine draws the next batch while this one encodes and writes the
// last (bs are the two builders they pass between them).
func writeFile(path string, o GenOptions, f int, g *rowGen, bs *[2]batchBuilder) (err error) {
	first, end := fileRows(o, f)
	schema := fileSchema(o, f, g.base(first), g.base(end))
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("events: generate: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	mem := memory.DefaultAllocator
	wopts := []ipc.Option{ipc.WithSchema(schema), ipc.WithAllocator(mem)}
	switch o.Compression {
	case "lz4":
		wopts = append(wopts, ipc.WithLZ4())
	case "zstd":
		wopts = append(wopts, ipc.WithZstd())
	}
	w, err := ipc.NewFileWriter(bw, wopts...)
	if err != nil {
		return fmt.Errorf("events: generate %s: %w", tmp.Name(), err)
	}
	dicts := newDictionaries(mem)
	defer dicts.release()
	free := make(chan *batchBuilder, len(bs))
	for i := range bs {
		free <- &bs[i]
	}
	ready := make(chan filledBatch, len(bs))
	done := make(chan struct{})
	go produceBatches(o, g, first, end, free, ready, done)
	defer func() {
		close(done)
		for range ready { // wait until the producer is gone: g and bs are the next file's
		}
	}()
	for fb := range ready {
		rec := fb.b.record(schema, dicts)
		err := w.Write(rec)
		rec.Release()
		if err != nil {
			w.Close()
			return fmt.Errorf("events: generate %s: rows %d–%d: %w", tmp.Name(), fb.row, fb.end-1, err)
		}
		free <- fb.b
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("events: generate %s: %w", tmp.Name(), err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("events: generate: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("events: generate: fsync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("events: generate: close %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("events: generate: %w", err)
	}
	if o.Sidecar {
		if err := arrowscan.WriteSidecar(path); err != nil {
			return fmt.Errorf("events: generate: %w", err)
		}
	}
	return nil
}

// syncDir flushes dir so that the renames are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("events: generate: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("events: generate: fsync %s: %w", dir, err)
	}
	return nil
}
