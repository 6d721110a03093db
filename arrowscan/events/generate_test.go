package events

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// allEvents reads every row of the files with the reference reader.
func allEvents(t *testing.T, paths []string) []event {
	t.Helper()
	var evs []event
	for _, p := range paths {
		b := openBatches(t, p, nil)
		for b.Next() {
			rows, err := newRecordRows(b.Record())
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < int(b.Record().NumRows()); i++ {
				ev, err := rows.event(i)
				if err != nil {
					t.Fatal(err)
				}
				evs = append(evs, ev)
			}
		}
		if b.Err() != nil {
			t.Fatal(b.Err())
		}
	}
	return evs
}

func TestGenerateIsDeterministic(t *testing.T) {
	opts := GenOptions{Rows: 30_000, RowsPerBatch: 7_000, Files: 2, Seed: 42}
	a := generated(t, opts)
	b, err := Generate(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		x, _ := os.ReadFile(a[i])
		y, _ := os.ReadFile(b[i])
		if !bytes.Equal(x, y) {
			t.Errorf("file %d differs between two runs with the same options", i)
		}
	}
	opts.Seed = 43
	c, err := Generate(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := os.ReadFile(a[0])
	y, _ := os.ReadFile(c[0])
	if bytes.Equal(x, y) {
		t.Error("seeds 42 and 43 wrote the same file")
	}
}

// TestGenerateLayoutDoesNotChangeRows: the rows depend on the seed, not on
// files, batch length, compression or the number of workers.
func TestGenerateLayoutDoesNotChangeRows(t *testing.T) {
	base := GenOptions{Rows: 25_000, Seed: 9, RowsPerBatch: 25_000, Files: 1}
	want := allEvents(t, generated(t, base))
	if len(want) != 25_000 {
		t.Fatalf("%d rows, want 25000", len(want))
	}
	for _, o := range []GenOptions{
		{Rows: 25_000, Seed: 9, RowsPerBatch: 1000, Files: 3},
		{Rows: 25_000, Seed: 9, RowsPerBatch: 4097, RowsPerFile: 10_000, Compression: "lz4", Workers: 1},
		{Rows: 25_000, Seed: 9, RowsPerBatch: 333, Files: 7, Compression: "zstd"},
	} {
		got := allEvents(t, generated(t, o))
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, want %d", o, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: row %d is %+v, want %+v", o, i, got[i], want[i])
			}
		}
	}
}

// TestGeneratedFiles checks what the doc promises of every file: schema,
// metadata, consecutive time ranges, non-decreasing ts inside them, batch
// lengths, price null unless purchase, value sets.
func TestGeneratedFiles(t *testing.T) {
	opts := GenOptions{Rows: 50_001, RowsPerBatch: 4000, Files: 3, Seed: 5, Span: 6 * time.Hour}
	paths := generated(t, opts)
	if len(paths) != 3 {
		t.Fatalf("%d files, want 3", len(paths))
	}
	var total int64
	var prevEnd int64
	for fi, p := range paths {
		if filepath.Base(p) != FileName(fi) {
			t.Errorf("file %d is named %s", fi, filepath.Base(p))
		}
		b := openBatches(t, p, nil)
		s := b.r.Schema()
		if !s.Equal(Schema()) {
			t.Fatalf("%s: schema %s, want %s", p, s, Schema())
		}
		start, end, err := timeRangeOf(s)
		if err != nil {
			t.Fatal(err)
		}
		md := s.Metadata()
		if v, _ := md.GetValue(MetaFileIndex); v != strconv.Itoa(fi) {
			t.Errorf("%s: %s = %q", p, MetaFileIndex, v)
		}
		if v, _ := md.GetValue(MetaRowsTotal); v != "50001" {
			t.Errorf("%s: %s = %q", p, MetaRowsTotal, v)
		}
		if fi == 0 && start != DefaultStart.UnixMicro() {
			t.Errorf("first file starts at %d, want %d", start, DefaultStart.UnixMicro())
		}
		if fi > 0 && start != prevEnd {
			t.Errorf("file %d starts at %d, the previous ended at %d", fi, start, prevEnd)
		}
		prevEnd = end
		last := int64(-1 << 63)
		for b.Next() {
			rec := b.Record()
			if rec.NumRows() > int64(opts.RowsPerBatch) || rec.NumRows() == 0 {
				t.Errorf("%s: batch of %d rows", p, rec.NumRows())
			}
			rows, err := newRecordRows(rec)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				ev, _ := rows.event(i)
				if ev.ts < start || ev.ts >= end {
					t.Fatalf("%s: ts %d outside the file's range [%d, %d)", p, ev.ts, start, end)
				}
				if ev.ts < last {
					t.Fatalf("%s: ts decreases: %d after %d", p, ev.ts, last)
				}
				last = ev.ts
				if ev.hasPrice != (ev.eventType == "purchase") || (ev.hasPrice && ev.price <= 0) {
					t.Fatalf("%s: %s event with price %v (valid %v)", p, ev.eventType, ev.price, ev.hasPrice)
				}
				if ev.customer < customerBase || ev.customer >= customerBase+customerPrime || ev.latency <= 0 || ev.bytes <= 0 || ev.status < 200 || ev.userAgent == "" {
					t.Fatalf("%s: implausible row %+v", p, ev)
				}
			}
			total += rec.NumRows()
		}
	}
	if total != opts.Rows {
		t.Errorf("%d rows in all, want %d", total, opts.Rows)
	}
	if want := DefaultStart.Add(6 * time.Hour).UnixMicro(); prevEnd != want {
		t.Errorf("last file ends at %d, want %d", prevEnd, want)
	}
	if entries, _ := filepath.Glob(filepath.Join(filepath.Dir(paths[0]), ".*tmp")); len(entries) != 0 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// TestGeneratedDistributions: the skew the queries rely on is there.
func TestGeneratedDistributions(t *testing.T) {
	paths := generated(t, GenOptions{Rows: 200_000, Seed: 1, Files: 2})
	evs := allEvents(t, paths)
	countries, types, customers := map[string]int{}, map[string]int{}, map[int64]int{}
	errs := 0
	for _, e := range evs {
		countries[e.country]++
		types[e.eventType]++
		customers[e.customer]++
		if e.status >= 500 {
			errs++
		}
	}
	n := float64(len(evs))
	share := func(k int) float64 { return float64(k) / n }
	if len(countries) != 50 || share(countries["US"]) < 0.15 || share(countries["HU"]) > 0.01 {
		t.Errorf("country skew: %d countries, US %.3f, HU %.4f", len(countries), share(countries["US"]), share(countries["HU"]))
	}
	if s := share(types["purchase"]); s < 0.03 || s > 0.04 {
		t.Errorf("purchase share %.4f, want about 0.035", s)
	}
	if s := share(errs); s < 0.012 || s > 0.018 {
		t.Errorf("share of status ≥ 500 %.4f, want about 0.015", s)
	}
	top := 0
	for _, c := range customers {
		top = max(top, c)
	}
	if len(customers) < 10_000 || share(top) < 0.01 {
		t.Errorf("customer skew: %d customers, top customer %.4f of events", len(customers), share(top))
	}
	var size int64
	for _, p := range paths {
		st, _ := os.Stat(p)
		size += st.Size()
	}
	if per := float64(size) / n; per < 60 || per > 90 {
		t.Errorf("%.1f bytes per row, want 60–90", per)
	}
}

func TestGenOptionsErrors(t *testing.T) {
	for _, c := range []struct {
		opts GenOptions
		want string
	}{
		{GenOptions{}, "Rows must be at least 1, got 0"},
		{GenOptions{Rows: -5}, "Rows must be at least 1, got -5"},
		{GenOptions{Rows: 10, RowsPerBatch: -1}, "RowsPerBatch must not be negative"},
		{GenOptions{Rows: 10, Files: 11}, "Files (11) must not exceed Rows (10)"},
		{GenOptions{Rows: 10, Files: 2, RowsPerFile: 5}, "not both"},
		{GenOptions{Rows: 10, Files: -1}, "must not be negative"},
		{GenOptions{Rows: 10, Compression: "gzip"}, `unknown Compression "gzip"`},
		{GenOptions{Rows: 10, Customers: -1}, "Customers must be between"},
		{GenOptions{Rows: 10, Customers: maxCustomers + 1}, "Customers must be between"},
		{GenOptions{Rows: 10, Span: -time.Second}, "Span must be positive"},
		{GenOptions{Rows: 10, Span: time.Nanosecond}, "Span must be at least 1µs"},
		{GenOptions{Rows: 10, Start: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), Span: 48 * time.Hour}, "leaves the years"},
		{GenOptions{Rows: 10, Workers: -2}, "Workers must not be negative"},
		{GenOptions{Rows: 1 << 40, RowsPerFile: 1}, "more than 1000000"},
	} {
		_, err := Generate(t.TempDir(), c.opts)
		if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want ErrBadOptions mentioning %q", c.opts, err, c.want)
		}
		if s := c.opts.String(); !strings.Contains(s, "invalid GenOptions") {
			t.Errorf("String of bad options %+v: %q", c.opts, s)
		}
	}
	s := GenOptions{Rows: 10}.String()
	for _, want := range []string{"rows=10", "rows_per_batch=65536", "files=1", "compression=none", "customers=100000", "span=24h0m0s"} {
		if !strings.Contains(s, want) {
			t.Errorf("String %q lacks %q", s, want)
		}
	}
}

// TestGenerateFailureLeavesNoFile: when a file cannot be put under its
// name, Generate fails naming it and leaves neither it nor a temporary file.
func TestGenerateFailureLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, FileName(1))
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Generate(dir, GenOptions{Rows: 1000, Files: 2})
	if err == nil || !strings.Contains(err.Error(), FileName(1)) {
		t.Fatalf("error %v does not name %s", err, FileName(1))
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	if _, err := Generate(filepath.Join("/proc/self/status", "sub"), GenOptions{Rows: 10}); err == nil {
		t.Error("Generate into a path under a regular file succeeded")
	}
}

func TestSchemaHasMostlyFixedWidthColumns(t *testing.T) {
	s := Schema()
	if s.NumFields() != 10 || s.HasMetadata() {
		t.Fatalf("schema %s", s)
	}
	for _, f := range s.Fields() {
		if f.Nullable != (f.Name == ColPrice) {
			t.Errorf("column %s nullable = %v", f.Name, f.Nullable)
		}
	}
	if !arrow.TypeEqual(s.Field(3).Type, countryType) || !arrow.TypeEqual(s.Field(0).Type, tsType) {
		t.Errorf("types: %s", s)
	}
}
