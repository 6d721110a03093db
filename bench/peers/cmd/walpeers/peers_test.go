package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	tidwal "github.com/tidwall/wal"
	etcdwal "go.etcd.io/etcd/server/v3/storage/wal"
	"go.uber.org/zap"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/bench/walbench"
)

// readAll reopens a peer's directory and returns its entries' payloads in
// index order, failing the test unless their indexes run from 1 with no
// gap.
var readAll = map[string]func(t *testing.T, dir string) [][]byte{
	"raft-wal": func(t *testing.T, dir string) [][]byte {
		meta := &metadb.BoltMetaDB{}
		defer meta.Close()
		w, err := raftwal.Open(dir, raftwal.WithMetaStore(meta))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		first, err := w.FirstIndex()
		if err != nil {
			t.Fatal(err)
		}
		last, err := w.LastIndex()
		if err != nil {
			t.Fatal(err)
		}
		if last > 0 && first != 1 {
			t.Fatalf("first index %d, want 1", first)
		}
		var out [][]byte
		for i := first; last > 0 && i <= last; i++ {
			var l raft.Log
			if err := w.GetLog(i, &l); err != nil {
				t.Fatalf("index %d: %v", i, err)
			}
			out = append(out, l.Data)
		}
		return out
	},
	"tidwall-wal": func(t *testing.T, dir string) [][]byte {
		l, err := tidwal.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		first, err := l.FirstIndex()
		if err != nil {
			t.Fatal(err)
		}
		last, err := l.LastIndex()
		if err != nil {
			t.Fatal(err)
		}
		if last > 0 && first != 1 {
			t.Fatalf("first index %d, want 1", first)
		}
		var out [][]byte
		for i := first; last > 0 && i <= last; i++ {
			b, err := l.Read(i)
			if err != nil {
				t.Fatalf("index %d: %v", i, err)
			}
			out = append(out, b)
		}
		return out
	},
	"etcd-wal": func(t *testing.T, dir string) [][]byte {
		w, err := etcdwal.Open(zap.NewNop(), filepath.Join(dir, "etcd"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		_, _, ents, err := w.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		var out [][]byte
		for i, e := range ents {
			if e.GetIndex() != uint64(i)+1 {
				t.Fatalf("entry %d has index %d", i, e.GetIndex())
			}
			out = append(out, e.GetData())
		}
		return out
	},
}

// TestPeers runs every peer briefly with several writers, one entry per
// call and in its batch API, and checks that every acknowledged entry is
// there when the log is opened again.
func TestPeers(t *testing.T) {
	for _, p := range walbench.Peers {
		for _, batch := range []int{0, 8} {
			t.Run(fmt.Sprintf("%s/batch=%d", p.Mode, batch), func(t *testing.T) {
				dir := t.TempDir()
				l, err := peers[p.Mode](dir, batch > 0)
				if err != nil {
					t.Fatal(err)
				}
				// 200 ms: long enough that a flush stalled by a busy disk still leaves
				// calls that completed inside the measured part.
				c := walbench.ChildConfig{Writers: 8, EntrySize: walbench.EntrySize, Duration: 200 * time.Millisecond, Batch: batch}
				var tr bench.Trial
				if batch > 0 {
					tr, err = measureBatched(c, l)
				} else {
					s := &serial{p: l, next: 1}
					tr, err = walbench.Measure(c, func(_ int, b []byte) error { return s.append(b) }, walbench.PerCall(&s.calls))
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := l.close(); err != nil {
					t.Fatal(err)
				}
				if tr.Ops <= 0 || tr.P99us < tr.P50us {
					t.Errorf("implausible trial %+v", tr)
				}
				// Every call was acknowledged, those of the warm-up and those
				// after the end too: the log holds at least the counted ones.
				if got := len(readAll[p.Mode](t, dir)); got < int(tr.Extra[walbench.ExtraEntries]) {
					t.Errorf("reopened log holds %d entries, %v were counted in the measured part alone", got, tr.Extra[walbench.ExtraEntries])
				}
			})
		}
	}
}

// TestBatchLeader: 64 writers append through each peer's batch mode; after
// close every acknowledged entry is in the reopened log, each writer's in
// its order, and the leader wrote more than one entry a call.
func TestBatchLeader(t *testing.T) {
	const writers, each = 64, 12
	for _, p := range walbench.Peers {
		t.Run(p.Mode, func(t *testing.T) {
			dir := t.TempDir()
			pl, err := peers[p.Mode](dir, true)
			if err != nil {
				t.Fatal(err)
			}
			l, err := newBatchLeader(pl, writers)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					pend, payload := newPending(), make([]byte, walbench.EntrySize)
					for seq := range each {
						binary.LittleEndian.PutUint64(payload, uint64(w))
						binary.LittleEndian.PutUint64(payload[8:], uint64(seq))
						if err := l.append(pend, payload); err != nil {
							errs <- fmt.Errorf("writer %d, entry %d: %w", w, seq, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			l.stop()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if err := pl.close(); err != nil {
				t.Fatal(err)
			}
			if got := l.entries.Load(); got != writers*each {
				t.Fatalf("leader counted %d entries, want %d", got, writers*each)
			}
			if calls := l.calls.Load(); calls >= writers*each {
				t.Errorf("%d calls for %d entries: the leader did not batch", calls, writers*each)
			}
			ents := readAll[p.Mode](t, dir)
			if len(ents) != writers*each {
				t.Fatalf("reopened log holds %d entries, want %d", len(ents), writers*each)
			}
			next := make([]uint64, writers)
			for i, e := range ents {
				if len(e) != walbench.EntrySize {
					t.Fatalf("index %d: %d bytes, want %d", i+1, len(e), walbench.EntrySize)
				}
				w, seq := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint64(e[8:])
				if w >= writers || seq != next[w] {
					t.Fatalf("index %d: writer %d's entry %d, want its entry %d", i+1, w, seq, next[min(w, writers-1)])
				}
				next[w]++
			}
		})
	}
}

// failing is a peer whose calls fail after ok successful ones.
type failing struct {
	ok    int
	calls int
}

var errFail = errors.New("injected write failure")

func (f *failing) write(uint64, [][]byte) error {
	f.calls++
	if f.calls > f.ok {
		return errFail
	}
	return nil
}
func (f *failing) close() error { return nil }

// TestBatchLeaderStopsWritingAfterAnError: a failed call's writers get its
// error, and so does every later append, without another call.
func TestBatchLeaderStopsWritingAfterAnError(t *testing.T) {
	f := &failing{ok: 1}
	l, err := newBatchLeader(f, 4)
	if err != nil {
		t.Fatal(err)
	}
	w := newPending()
	if err := l.append(w, []byte("a")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := l.append(w, []byte("b")); !errors.Is(err, errFail) {
			t.Fatalf("got %v, want the injected failure", err)
		}
	}
	l.stop()
	if f.calls != 2 {
		t.Errorf("%d calls, want 2: none after the failed one", f.calls)
	}
	if _, err := newBatchLeader(f, 0); err == nil {
		t.Error("a batch cap of 0 was accepted")
	}
}
