package walbench

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestMeasureCountsOnlyTheMeasuredPart(t *testing.T) {
	var calls atomic.Uint64
	seen := make([]atomic.Uint64, 4)
	c := ChildConfig{Writers: 4, EntrySize: 64, Duration: 50 * time.Millisecond, WarmupFrac: 0.2}
	tr, err := Measure(c, func(w int, p []byte) error {
		if len(p) != 64 {
			return errors.New("wrong payload size")
		}
		seen[w].Add(1)
		time.Sleep(100 * time.Microsecond)
		calls.Add(1)
		return nil
	}, PerCall(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Ops <= 0 || tr.Seconds < 0.05 || tr.P50us < 100 || tr.P99us < tr.P50us {
		t.Errorf("implausible trial %+v", tr)
	}
	if e := tr.Extra[ExtraEntries]; e < float64(tr.Ops) || e > float64(tr.Ops)+float64(c.Writers) {
		t.Errorf("counted %v entries for %d ops", e, tr.Ops)
	}
	var total uint64
	for w := range seen {
		if seen[w].Load() == 0 {
			t.Errorf("writer %d never ran", w)
		}
		total += seen[w].Load()
	}
	if total <= uint64(tr.Ops) {
		t.Errorf("the warm-up was counted: %d calls in all, %d measured", total, tr.Ops)
	}
	if MarkInferred(tr).Extra[ExtraFlushesInferred] != 1 {
		t.Error("MarkInferred did not mark")
	}
}

func TestMeasureStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Measure(ChildConfig{Writers: 8, EntrySize: 16, Duration: time.Minute}, func(int, []byte) error { return boom }, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if _, err := Measure(ChildConfig{Writers: 0, EntrySize: 16, Duration: time.Second}, nil, nil); err == nil {
		t.Error("zero writers accepted")
	}
}

func TestFindPeersSource(t *testing.T) {
	src, err := FindPeersSource()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Abs(filepath.Join("..", "peers"))
	if src != want {
		t.Errorf("found %s, want %s", src, want)
	}
	t.Chdir(t.TempDir())
	// From elsewhere it falls back to the tree this package was built from.
	if src2, err := FindPeersSource(); err != nil || filepath.Clean(src2) != want {
		t.Errorf("from a temporary directory: %s, %v", src2, err)
	}
}
