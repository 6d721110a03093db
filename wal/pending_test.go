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
