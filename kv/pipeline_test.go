package kv

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// TestCommitPipelineGathers: concurrent writers' groups are queued to the
// log without each waiting for the one before it to be flushed, so the log
// puts several kv groups into one flush — more log entries per flush than
// batches per kv group, which a writer queue that waits for each group's
// flush cannot give (there every flush holds exactly one group). Every
// acknowledged write is readable, and after a reopen too.
func TestCommitPipelineGathers(t *testing.T) {
	for _, c := range []config{{"uring", ioengine.URing, Options{}}, {"syscall", ioengine.Syscall, Options{}}} {
		t.Run(c.name, func(t *testing.T) {
			dir := testdir.Direct(t)
			db := openTest(t, dir, c)
			const writers, each = 32, 40
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						if err := db.Put([]byte(fmt.Sprintf("w%02d-%03d", w, i)), bytes.Repeat([]byte{byte(w)}, 100)); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			st, ls := db.Stats(), db.log.Stats()
			if st.Writes != writers*each {
				t.Fatalf("%d writes, want %d", st.Writes, writers*each)
			}
			batchesPerGroup := float64(st.Writes) / float64(st.Commits)
			entriesPerFlush := float64(ls.Entries) / float64(ls.Flushes)
			t.Logf("%d writes in %d kv groups (%.1f per group), %d log entries in %d flushes (%.1f per flush)",
				st.Writes, st.Commits, batchesPerGroup, ls.Entries, ls.Flushes, entriesPerFlush)
			if entriesPerFlush <= batchesPerGroup*1.2 {
				t.Errorf("%.1f log entries per flush for %.1f batches per kv group: the log did not gather several groups into a flush", entriesPerFlush, batchesPerGroup)
			}
			check := func(db *DB) {
				for w := range writers {
					for i := range each {
						if v, err := db.Get([]byte(fmt.Sprintf("w%02d-%03d", w, i))); err != nil || len(v) != 100 || v[0] != byte(w) {
							t.Fatalf("w%02d-%03d: %d bytes, %v", w, i, len(v), err)
						}
					}
				}
			}
			check(db)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = openTest(t, dir, c)
			defer db.Close()
			check(db)
		})
	}
}
