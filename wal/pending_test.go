package wal

import (
	"bytes"
	"testing"

	"github.com/ringstore/ringstore/ioengine"
)

// TestStartAppendBatch: batches queued one after another without waiting go
// into the log in the order they were queued, are gathered into fewer
// flushes than batches, and read back; an empty batch is refused.
func TestStartAppendBatch(t *testing.T) {
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		t.Run(mode.String(), func(t *testing.T) {
			l := openTest(t, t.TempDir(), Options{IOMode: mode})
			defer l.Close()
			if _, err := l.StartAppendBatch(nil); err == nil {
				t.Fatal("an empty batch was queued")
			}
			const n = 200
			pend := make([]*PendingAppend, n)
			for i := range pend {
				var err error
				if pend[i], err = l.StartAppendBatch([][]byte{payloadFor(uint64(2 * i)), payloadFor(uint64(2*i + 1))}); err != nil {
					t.Fatal(err)
				}
			}
			for i, p := range pend {
				seq, err := p.Wait()
				if err != nil || seq != uint64(2*i+1) {
					t.Fatalf("batch %d: first seq %d, %v; want %d", i, seq, err, 2*i+1)
				}
			}
			for s := uint64(1); s <= 2*n; s++ {
				if p, err := l.ReadAt(s); err != nil || !bytes.Equal(p, payloadFor(s-1)) {
					t.Fatalf("entry %d: %v", s, err)
				}
			}
			if st := l.Stats(); st.Flushes >= n {
				t.Errorf("%d flushes for %d batches queued at once", st.Flushes, n)
			}
		})
	}
}

// TestOnGroupWrite: the hook is called once per group commit, before the
// group is durable, with the number of requests in it: over a run the
// calls equal the flushes and their counts the requests.
func TestOnGroupWrite(t *testing.T) {
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		t.Run(mode.String(), func(t *testing.T) {
			var calls, requests int
			var pend []*PendingAppend
			release := make(chan struct{})
			opts := Options{IOMode: mode, OnGroupWrite: func(n int) {
				if calls == 0 {
					<-release // hold the first group until every request is queued
				}
				calls++
				requests += n
			}}
			l := openTest(t, t.TempDir(), opts)
			defer l.Close()
			const n = 100
			for i := 0; i < n; i++ {
				p, err := l.StartAppendBatch([][]byte{payloadFor(uint64(i))})
				if err != nil {
					t.Fatal(err)
				}
				pend = append(pend, p)
			}
			close(release)
			for _, p := range pend {
				if _, err := p.Wait(); err != nil {
					t.Fatal(err)
				}
			}
			st := l.Stats()
			if calls != int(st.Flushes) || requests != n {
				t.Fatalf("hook: %d calls for %d requests; the log made %d flushes of %d requests", calls, requests, st.Flushes, n)
			}
			if calls >= n {
				t.Fatalf("%d groups for %d requests queued while the first was held: nothing was gathered", calls, n)
			}
		})
	}
}
