package wal

import (
	"sync"
	"testing"

	"github.com/ringstore/ringstore/ioengine"
)

// TestInlineFlushEngine: at depth 1 on io_uring the group flushes go
// through the committer's own inline engine — also when the log is given a
// shared engine, as kv gives it one — and entries written through it read
// back; noInlineFlush, depth 2 and the syscall backend keep them on the
// log's engine.
func TestInlineFlushEngine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		inline bool
	}{
		{"uring default", Options{IOMode: ioengine.URing}, true},
		{"uring shared engine", Options{Engine: sharedEngine(t)}, true},
		{"uring noInlineFlush", Options{IOMode: ioengine.URing, noInlineFlush: true}, false},
		{"uring depth 2", Options{IOMode: ioengine.URing, PipelineDepth: 2}, false},
		{"syscall", Options{IOMode: ioengine.Syscall}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openTest(t, dir, tc.opts)
			if l.eng.Backend() != ioengine.BackendURing && (tc.opts.IOMode == ioengine.URing || tc.opts.Engine != nil) {
				l.Close()
				t.Skipf("io_uring not available: %s", l.eng.FallbackReason())
			}
			if got := l.flushEng != nil; got != tc.inline {
				t.Fatalf("inline flush engine %v, want %v", got, tc.inline)
			}
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 50 {
						if _, err := l.Append(payloadFor(uint64(w*1000 + i))); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			if tc.inline {
				if st := l.flushEng.Stats(); st.Requests == 0 || st.Enters == 0 {
					t.Errorf("inline engine ran %d requests in %d enters, want the group flushes", st.Requests, st.Enters)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openTest(t, dir, tc.opts)
			defer l.Close()
			if got := l.LastSeq(); got != 400 {
				t.Fatalf("reopened with LastSeq %d, want 400", got)
			}
			for seq := uint64(1); seq <= 400; seq++ {
				if _, err := l.ReadAt(seq); err != nil {
					t.Fatalf("ReadAt(%d): %v", seq, err)
				}
			}
		})
	}
}

// sharedEngine is an io_uring engine the test closes, as a caller's engine
// given to the log (Options.Engine).
func sharedEngine(t *testing.T) *ioengine.Engine {
	e, err := ioengine.New(ioengine.Options{Mode: ioengine.URing})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
