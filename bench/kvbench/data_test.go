package kvbench

import (
	"bytes"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestKeysAreUniqueAndSized(t *testing.T) {
	const n = 200_000
	seen := make(map[string]uint64, n)
	lens := map[int]int{}
	for i := range uint64(n) {
		k := string(Key(i))
		if len(k) < MinKeyLen || len(k) > MaxKeyLen || !strings.HasPrefix(k, "user") {
			t.Fatalf("key %d is %q (%d bytes)", i, k, len(k))
		}
		if j, dup := seen[k]; dup {
			t.Fatalf("keys %d and %d are both %q", j, i, k)
		}
		seen[k] = i
		lens[len(k)]++
	}
	if len(lens) < 10 {
		t.Errorf("key lengths vary too little: %v", lens)
	}
	// The largest indexes still give keys of at most MaxKeyLen bytes.
	for _, i := range []uint64{MaxKeys - 1, MaxKeys - 2, 1 << 40} {
		if k := Key(i); len(k) > MaxKeyLen {
			t.Errorf("key %d is %d bytes", i, len(k))
		}
	}
}

func TestValues(t *testing.T) {
	for i := range uint64(1000) {
		v := Value(i)
		if len(v) < MinValueLen || len(v) > MaxValueLen || len(v) != ValueLen(i) {
			t.Fatalf("value %d has %d bytes", i, len(v))
		}
		if !CheckValue(v, i) || CheckValue(v, i+1) {
			t.Fatalf("CheckValue is wrong for value %d", i)
		}
		if !bytes.Equal(v, Value(i)) {
			t.Fatalf("value %d is not deterministic", i)
		}
		if err := Check(Key(i), i, v, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := Check(Key(1), 1, Value(2), true); !errors.Is(err, ErrWrongValue) {
		t.Errorf("another key's value passed: %v", err)
	}
	if err := Check(Key(1), 1, nil, false); !errors.Is(err, ErrWrongValue) {
		t.Errorf("a missing key passed: %v", err)
	}
	if got, want := DataBytes(100), int64(0); got <= want {
		t.Errorf("DataBytes(100) = %d", got)
	}
	if small, big := DataBytes(1<<14), DataBytes(1<<16); big < 3*small || big > 5*small {
		t.Errorf("DataBytes is not about proportional: %d for 2^14 keys, %d for 2^16", small, big)
	}
}

func TestChoosers(t *testing.T) {
	const n, draws = 10_000, 200_000
	for _, dist := range []string{Uniform, Zipfian} {
		c, err := NewChooser(dist, n, 1)
		if err != nil {
			t.Fatal(err)
		}
		counts := make([]int, n)
		for range draws {
			i := c.Next()
			if i >= n {
				t.Fatalf("%s: %d out of range", dist, i)
			}
			counts[i]++
		}
		top := 0
		for _, v := range counts {
			top = max(top, v)
		}
		// Uniform: about 20 per key; zipfian (θ 0.99): the hottest key
		// takes several percent.
		if dist == Uniform && top > 60 || dist == Zipfian && top < draws/100 {
			t.Errorf("%s: hottest key drawn %d times of %d", dist, top, draws)
		}
	}
	if _, err := NewChooser("pareto", n, 1); err == nil {
		t.Error("unknown distribution accepted")
	}
}

func TestMeasureAndFanout(t *testing.T) {
	var inflight, peak atomic.Int64
	f := NewFanout(16, func(_ int, k []byte, idx uint64) error {
		n := inflight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		inflight.Add(-1)
		if !bytes.Equal(k, Key(idx)) {
			return errors.New("key and index disagree")
		}
		return nil
	})
	defer f.Close()
	var calls atomic.Int64
	c := ChildConfig{Keys: 1000, Batch: 16, Callers: 1, Duration: 50 * time.Millisecond, WarmupFrac: 0.2}
	tr, err := Measure(c, func(_ int, keys [][]byte, idx []uint64) error {
		calls.Add(1)
		return f.Do(keys, idx)
	}, func() map[string]float64 { return map[string]float64{XBlockReads: float64(calls.Load())} })
	if err != nil {
		t.Fatal(err)
	}
	if tr.Ops <= 0 || tr.Ops%16 != 0 || tr.P50us < 1000 || tr.P99us < tr.P50us {
		t.Errorf("implausible trial %+v", tr)
	}
	if peak.Load() < 8 {
		t.Errorf("the fanout ran at most %d Gets at once", peak.Load())
	}
	if got := tr.Extra[XBlockReads]; got < float64(tr.Ops/16) || float64(calls.Load()) <= got {
		t.Errorf("counter difference %v for %d batches measured, %d called (warm-up included)", got, tr.Ops/16, calls.Load())
	}
	boom := errors.New("boom")
	if _, err := Measure(ChildConfig{Keys: 10, Batch: 2, Callers: 3, Duration: time.Minute}, func(int, [][]byte, []uint64) error { return boom }, nil); !errors.Is(err, boom) {
		t.Errorf("got %v, want boom", err)
	}
}
