package gokastore

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
)

// coldStore writes parts partitions of n keys each with values of 200 bytes
// into a store whose block cache holds a small part of them, and compacts
// it, so that Gets read from the device.
func coldStore(t *testing.T, parts, n int) (*Store, []*Storage) {
	t.Helper()
	s, err := Open(t.TempDir(), Options{KV: kv.Options{MemtableSize: 1 << 20, CacheSize: 256 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	val := make([]byte, 200)
	var sts []*Storage
	for p := 0; p < parts; p++ {
		st, err := s.Build("t", int32(p))
		must(t, err)
		t.Cleanup(func() { st.Close() })
		for i := 0; i < n; i++ {
			must(t, st.Set(fmt.Sprintf("k%07d", i), val))
		}
		sts = append(sts, st)
	}
	must(t, s.DB().Flush())
	must(t, s.DB().Compact())
	return s, sts
}

// getsPerEnter runs gets random Gets on each of goroutines goroutines (one
// partition each) and returns the engine's requests per io_uring_enter.
func getsPerEnter(t *testing.T, s *Store, sts []*Storage, goroutines, gets, n int) (float64, ioengine.Stats) {
	t.Helper()
	before := s.DB().Stats().Engine
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for i := 0; i < gets; i++ {
				v, err := sts[g].Get(fmt.Sprintf("k%07d", rng.Intn(n)))
				if err != nil || v == nil {
					t.Errorf("Get: %v, %v", v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	after := s.DB().Stats().Engine
	d := ioengine.Stats{Requests: after.Requests - before.Requests, Enters: after.Enters - before.Enters, SQEs: after.SQEs - before.SQEs}
	if d.Enters == 0 {
		t.Fatalf("no io_uring_enter for %d cold Gets", goroutines*gets)
	}
	return float64(d.Requests) / float64(d.Enters), d
}

// TestConcurrentGetsShareSubmissions shows the Gets of many partition
// goroutines meeting in shared io_uring submissions: with 8 goroutines the
// engine's requests per io_uring_enter exceed those of one goroutine.
func TestConcurrentGetsShareSubmissions(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector the goroutines' Gets rarely overlap")
	}
	const parts, n = 8, 4000
	s, sts := coldStore(t, parts, n)
	if b := s.DB().Stats().Backend; b != ioengine.BackendURing {
		t.Skipf("the store runs on the %v backend (%s): no ring to share", b, s.DB().Stats().FallbackCause)
	}
	one, d1 := getsPerEnter(t, s, sts, 1, 800, n)
	many, d8 := getsPerEnter(t, s, sts, parts, 800, n)
	t.Logf("requests per io_uring_enter: 1 goroutine %.2f (%d requests, %d enters), %d goroutines %.2f (%d requests, %d enters)",
		one, d1.Requests, d1.Enters, parts, many, d8.Requests, d8.Enters)
	if many <= one*1.2 {
		t.Fatalf("8 goroutines' Gets share no submissions: %.2f requests per enter, one goroutine %.2f", many, one)
	}
}
