package nexmark

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/ioengine"
)

// TestBesideReads: a run with reads beside its state's makes as many as
// it was asked for an event (less the fraction each worker still owes),
// and its output is the run's without them; a file it cannot read is an
// error naming it.
func TestBesideReads(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "beside.dat")
	if err := os.WriteFile(file, make([]byte, 256<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := RunConfig{Query: "q20", Events: 20_000, Parallelism: 2, Batch: 500, IOMode: ioengine.Auto}
	run := func(b BesideReads) (Result, error) {
		c := cfg
		c.Dir, c.BesideReads = t.TempDir(), b
		return Run(c)
	}
	plain, err := run(BesideReads{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.BesideReads != 0 {
		t.Fatalf("a run without reads beside read %d blocks beside", plain.BesideReads)
	}
	res, err := run(BesideReads{File: file, PerEvent: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if res.WorkerEvents < cfg.Events*9/10 || res.WorkerEvents > cfg.Events || res.WorkerEvents != plain.WorkerEvents {
		t.Errorf("workers processed %d of %d events (%d without the reads beside): q20 takes every bid and auction", res.WorkerEvents, cfg.Events, plain.WorkerEvents)
	}
	if want := res.WorkerEvents / 2; res.BesideReads > want || res.BesideReads < want-int64(cfg.Parallelism) {
		t.Errorf("read %d blocks beside %d events at 0.5 an event, want %d (less one a worker at most)", res.BesideReads, res.WorkerEvents, want)
	}
	if res.ReadRequests != plain.ReadRequests && (res.ReadRequests == 0 || plain.ReadRequests == 0) {
		t.Errorf("the state's read requests: %d with reads beside, %d without", res.ReadRequests, plain.ReadRequests)
	}
	big, err := run(BesideReads{File: file, PerEvent: 0.01, Size: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if want := big.WorkerEvents / 100; big.BesideReads > want || big.BesideReads < want-int64(cfg.Parallelism) {
		t.Errorf("read %d times 64 KiB beside %d events at 0.01 an event, want %d", big.BesideReads, big.WorkerEvents, want)
	}
	if res.Sink != plain.Sink || big.Sink != plain.Sink {
		t.Errorf("output with reads beside %+v, without %+v", res.Sink, plain.Sink)
	}
	small := filepath.Join(dir, "small.dat")
	if err := os.WriteFile(small, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(dir, "missing.dat"), small} {
		if _, err := run(BesideReads{File: f, PerEvent: 1}); err == nil || !strings.Contains(err.Error(), filepath.Base(f)) {
			t.Errorf("reads beside from %s: %v, want an error naming it", f, err)
		}
	}
	// Reads as large as the file.
	if _, err := run(BesideReads{File: file, PerEvent: 1, Size: MaxBesideSize}); err != nil {
		t.Errorf("reads of %d beside from a file of 256 KiB: %v", MaxBesideSize, err)
	}
}
