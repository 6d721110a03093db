package raftstore

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/wal"
)

// testSegmentSize is small so that tests rotate segments.
const testSegmentSize = 64 << 10

func testWALOptions() wal.Options {
	return wal.Options{SegmentSize: testSegmentSize, Logf: func(string, ...any) {}}
}

func newDir(t testing.TB) string { return testdir.Direct(t) }

func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir, testWALOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mkLog is the log the tests store at index i in term term.
func mkLog(i, term uint64) *raft.Log {
	l := &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: fmt.Appendf(nil, "entry %d term %d", i, term)}
	if i%3 == 0 {
		l.Extensions = []byte{byte(i)}
	}
	if i%2 == 0 {
		l.AppendedAt = time.Unix(1700000000, int64(i))
	}
	if i%5 == 0 {
		l.Type, l.Data = raft.LogNoop, nil
	}
	return l
}

func mkLogs(from, to, term uint64) []*raft.Log {
	var ls []*raft.Log
	for i := from; i <= to; i++ {
		ls = append(ls, mkLog(i, term))
	}
	return ls
}

func storeLogs(t testing.TB, s *Store, from, to, term uint64) {
	t.Helper()
	if err := s.StoreLogs(mkLogs(from, to, term)); err != nil {
		t.Fatalf("StoreLogs(%d..%d): %v", from, to, err)
	}
}

// checkRange checks that s holds exactly the indexes first..last (an empty
// log when last < first), each as mkLog gave it in term.
func checkRange(t testing.TB, s *Store, first, last, term uint64) {
	t.Helper()
	wantFirst, wantLast := first, last
	if last < first {
		wantFirst, wantLast = 0, 0
	}
	if got, err := s.FirstIndex(); err != nil || got != wantFirst {
		t.Errorf("FirstIndex = %d, %v; want %d", got, err, wantFirst)
	}
	if got, err := s.LastIndex(); err != nil || got != wantLast {
		t.Errorf("LastIndex = %d, %v; want %d", got, err, wantLast)
	}
	for i := first; i <= last; i++ {
		var l raft.Log
		if err := s.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if want := mkLog(i, term); !logsEqual(&l, want) {
			t.Fatalf("GetLog(%d) = %+v, want %+v", i, l, *want)
		}
	}
	for _, i := range []uint64{0, first - 1, last + 1, last + 1000} {
		if i >= first && i <= last {
			continue
		}
		var l raft.Log
		if err := s.GetLog(i, &l); err != raft.ErrLogNotFound {
			t.Errorf("GetLog(%d) outside %d..%d: %v, want raft.ErrLogNotFound", i, first, last, err)
		}
	}
}

func TestLogStore(t *testing.T) {
	type step struct {
		do        func(t *testing.T, s *Store) error
		wantErr   string // "" for success
		first     uint64 // the range held afterwards (last < first: empty)
		last      uint64
		term      uint64
		reopenNow bool
	}
	store := func(from, to, term uint64) func(*testing.T, *Store) error {
		return func(_ *testing.T, s *Store) error { return s.StoreLogs(mkLogs(from, to, term)) }
	}
	del := func(min, max uint64) func(*testing.T, *Store) error {
		return func(_ *testing.T, s *Store) error { return s.DeleteRange(min, max) }
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"empty", []step{
			{do: func(*testing.T, *Store) error { return nil }, first: 1, last: 0},
			{do: del(1, 10), first: 1, last: 0},
		}},
		{"store and get", []step{
			{do: store(1, 100, 1), first: 1, last: 100, term: 1},
			{do: func(_ *testing.T, s *Store) error { return s.StoreLog(mkLog(101, 1)) }, first: 1, last: 101, term: 1},
			{do: store(102, 102, 1), first: 1, last: 102, term: 1, reopenNow: true},
		}},
		{"first log not 1", []step{
			{do: store(50, 60, 2), first: 50, last: 60, term: 2, reopenNow: true},
			{do: store(61, 70, 2), first: 50, last: 70, term: 2},
		}},
		{"gap", []step{
			{do: store(1, 10, 1), first: 1, last: 10, term: 1},
			{do: store(12, 13, 1), wantErr: "expected index 11, got 12", first: 1, last: 10, term: 1},
			{do: store(10, 11, 1), wantErr: "expected index 11, got 10", first: 1, last: 10, term: 1},
			{do: func(_ *testing.T, s *Store) error {
				return s.StoreLogs([]*raft.Log{mkLog(11, 1), mkLog(13, 1)})
			}, wantErr: "expected index 12, got 13 (entry 1 of 2)", first: 1, last: 10, term: 1},
		}},
		{"delete front", []step{
			{do: store(1, 100, 1), first: 1, last: 100, term: 1},
			{do: del(1, 10), first: 11, last: 100, term: 1},
			{do: del(0, 20), first: 21, last: 100, term: 1, reopenNow: true},
			{do: del(5, 30), first: 31, last: 100, term: 1},
			{do: store(101, 110, 1), first: 31, last: 110, term: 1},
		}},
		{"delete back", []step{
			{do: store(1, 100, 1), first: 1, last: 100, term: 1},
			{do: del(91, 100), first: 1, last: 90, term: 1},
			{do: del(81, 1000), first: 1, last: 80, term: 1, reopenNow: true},
			{do: store(81, 85, 1), first: 1, last: 85, term: 1},
		}},
		{"delete back then new term", []step{
			{do: store(1, 10, 1), first: 1, last: 10, term: 1},
			{do: del(6, 10), first: 1, last: 5, term: 1},
			{do: func(t *testing.T, s *Store) error {
				if err := s.StoreLogs(mkLogs(6, 12, 2)); err != nil {
					return err
				}
				var l raft.Log
				if err := s.GetLog(6, &l); err != nil || l.Term != 2 {
					t.Errorf("GetLog(6) = %+v, %v; want term 2", l, err)
				}
				return s.DeleteRange(6, 12) // back to the term-1 prefix for the check
			}, first: 1, last: 5, term: 1},
		}},
		{"delete middle", []step{
			{do: store(1, 20, 1), first: 1, last: 20, term: 1},
			{do: del(5, 10), wantErr: "DeleteRange(5, 10): the log holds 1 to 20", first: 1, last: 20, term: 1},
		}},
		{"delete outside", []step{
			{do: store(10, 20, 1), first: 10, last: 20, term: 1},
			{do: del(1, 9), first: 10, last: 20, term: 1},
			{do: del(21, 30), first: 10, last: 20, term: 1},
			{do: del(15, 12), first: 10, last: 20, term: 1},
		}},
		{"delete all then restart higher (after InstallSnapshot)", []step{
			{do: store(1, 50, 1), first: 1, last: 50, term: 1},
			{do: del(1, 50), first: 1, last: 0, reopenNow: true},
			{do: store(200, 210, 3), first: 200, last: 210, term: 3, reopenNow: true},
			{do: store(211, 220, 3), first: 200, last: 220, term: 3},
		}},
		{"delete all then restart at the same first (conflicting log)", []step{
			{do: store(5, 10, 1), first: 5, last: 10, term: 1},
			{do: del(5, 10), first: 5, last: 4},
			{do: store(5, 8, 2), first: 5, last: 8, term: 2},
		}},
		{"delete all then lower index", []step{
			{do: store(5, 10, 1), first: 5, last: 10, term: 1},
			{do: del(0, 100), first: 5, last: 4},
			{do: store(3, 4, 1), wantErr: "expected index 5 or higher (the log is empty and starts at 5), got 3", first: 5, last: 4},
			{do: store(5, 6, 1), first: 5, last: 6, term: 1},
		}},
		{"compact everything (TrailingLogs 0)", []step{
			{do: store(1, 30, 1), first: 1, last: 30, term: 1},
			{do: del(1, 30), first: 1, last: 0},
			{do: store(31, 40, 1), first: 31, last: 40, term: 1, reopenNow: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newDir(t)
			s := openStore(t, dir)
			for i, st := range tc.steps {
				err := st.do(t, s)
				switch {
				case st.wantErr == "" && err != nil:
					t.Fatalf("step %d: %v", i, err)
				case st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)):
					t.Fatalf("step %d: error %v, want one containing %q", i, err, st.wantErr)
				}
				checkRange(t, s, st.first, st.last, st.term)
				if st.reopenNow {
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
					s = openStore(t, dir)
					checkRange(t, s, st.first, st.last, st.term)
				}
			}
		})
	}
}

func TestLogStoreRotationAndLargeBatch(t *testing.T) {
	dir := newDir(t)
	s := openStore(t, dir)
	var logs []*raft.Log
	for i := uint64(1); i <= 300; i++ {
		l := mkLog(i, 1)
		l.Data = bytes.Repeat([]byte{byte(i)}, 1000)
		logs = append(logs, l)
	}
	// 300 KiB in one StoreLogs: more than one 64 KiB segment holds.
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if n := s.Log().Stats().Segments; n < 4 {
		t.Errorf("%d segments after 300 KiB in 64 KiB segments", n)
	}
	check := func(s *Store) {
		t.Helper()
		for _, want := range logs {
			var l raft.Log
			if err := s.GetLog(want.Index, &l); err != nil || !logsEqual(&l, want) {
				t.Fatalf("GetLog(%d) = %+v, %v", want.Index, l, err)
			}
		}
	}
	check(s)
	s.Close()
	s = openStore(t, dir)
	check(s)
	// One entry larger than a segment is refused with the wal's error.
	huge := mkLog(301, 1)
	huge.Data = make([]byte, testSegmentSize)
	if err := s.StoreLog(huge); !errors.Is(err, wal.ErrEntryTooLarge) {
		t.Errorf("StoreLog of a %d-byte entry: %v, want wal.ErrEntryTooLarge", len(huge.Data), err)
	}
}

func TestClosedStore(t *testing.T) {
	s := openStore(t, newDir(t))
	storeLogs(t, s, 1, 3, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	var l raft.Log
	for name, err := range map[string]error{
		"StoreLogs":   s.StoreLog(mkLog(4, 1)),
		"DeleteRange": s.DeleteRange(1, 1),
		"GetLog":      s.GetLog(1, &l),
		"FirstIndex":  func() error { _, err := s.FirstIndex(); return err }(),
		"LastIndex":   func() error { _, err := s.LastIndex(); return err }(),
	} {
		if !errors.Is(err, ErrClosed) || !errors.Is(err, wal.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

func TestSecondOpenRefused(t *testing.T) {
	dir := newDir(t)
	openStore(t, dir)
	if s, err := Open(dir, testWALOptions()); err == nil {
		s.Close()
		t.Fatal("a second Store opened the same directory")
	} else if !errors.Is(err, wal.ErrLocked) {
		t.Errorf("second Open: %v, want wal.ErrLocked", err)
	}
}

// TestLogStoreConcurrent runs raft's pattern under the race detector: one
// writer appends and now and then cuts a suffix, another compacts the
// front, readers read everywhere.
func TestLogStoreConcurrent(t *testing.T) {
	s := openStore(t, newDir(t))
	const n = 1000
	var wg sync.WaitGroup
	done := make(chan struct{})
	errc := make(chan error, 8)
	wg.Add(1)
	go func() { // the main loop
		defer wg.Done()
		defer close(done)
		for i := uint64(1); i <= n; i += 10 {
			if err := s.StoreLogs(mkLogs(i, i+9, 1)); err != nil {
				errc <- err
				return
			}
			if i%100 == 1 {
				// a conflicting suffix: drop the last 5 and store them again
				if err := s.DeleteRange(i+5, i+9); err != nil {
					errc <- err
					return
				}
				if err := s.StoreLogs(mkLogs(i+5, i+9, 1)); err != nil {
					errc <- err
					return
				}
			}
		}
	}()
	wg.Add(1)
	go func() { // the snapshot goroutine
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			first, _ := s.FirstIndex()
			last, _ := s.LastIndex()
			if last > first+100 {
				if err := s.DeleteRange(first, last-100); err != nil {
					errc <- err
					return
				}
			}
		}
	}()
	for range 2 { // replication goroutines
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				last, _ := s.LastIndex()
				for i := last; i > 0 && i+50 > last; i-- {
					var l raft.Log
					err := s.GetLog(i, &l)
					if err == raft.ErrLogNotFound {
						continue // compacted meanwhile
					}
					if err != nil {
						errc <- err
						return
					}
					if want := mkLog(i, 1); !logsEqual(&l, want) {
						errc <- fmt.Errorf("GetLog(%d) = %+v, want %+v", i, l, *want)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	checkRange(t, s, first, last, 1)
}
