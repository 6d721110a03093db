package kv

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/ringstore/ringstore/ioengine"
)

// TestConcurrentWritersAndReaders runs writers that each count up their own
// keys while readers MultiGet and iterate: a reader must never see a
// writer's counter go backwards, a snapshot must keep answering the same,
// and flushes and compactions run underneath (tiny memtables).
func TestConcurrentWritersAndReaders(t *testing.T) {
	for _, c := range configs()[:2] {
		t.Run(c.name, func(t *testing.T) {
			db := openTest(t, t.TempDir(), c)
			const writers, keysPer, rounds = 4, 16, 60
			key := func(w, k int) []byte { return []byte(fmt.Sprintf("w%d/k%03d", w, k)) }
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := 1; r <= rounds; r++ {
						var b Batch
						for k := 0; k < keysPer; k++ {
							v := make([]byte, 8+r%200)
							binary.LittleEndian.PutUint64(v, uint64(r))
							b.Put(key(w, k), v)
						}
						if err := db.Write(&b); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			done := make(chan struct{})
			var rg sync.WaitGroup
			for rd := 0; rd < 2; rd++ {
				rg.Add(1)
				go func() {
					defer rg.Done()
					last := make([]uint64, writers)
					for {
						select {
						case <-done:
							return
						default:
						}
						snap := db.NewSnapshot()
						var keys [][]byte
						for w := 0; w < writers; w++ {
							keys = append(keys, key(w, 0), key(w, keysPer-1))
						}
						vals, found, err := snap.MultiGet(keys)
						if err != nil {
							errs <- err
							snap.Close()
							return
						}
						for w := 0; w < writers; w++ {
							a, b := vals[2*w], vals[2*w+1]
							if found[2*w] != found[2*w+1] {
								errs <- fmt.Errorf("writer %d: half a batch visible", w)
							}
							if !found[2*w] {
								continue
							}
							ra, rb := binary.LittleEndian.Uint64(a), binary.LittleEndian.Uint64(b)
							if ra != rb {
								errs <- fmt.Errorf("writer %d: keys of one batch at rounds %d and %d in one snapshot", w, ra, rb)
							}
							if ra < last[w] {
								errs <- fmt.Errorf("writer %d: round went back from %d to %d", w, last[w], ra)
							}
							last[w] = ra
						}
						again, _, err := snap.MultiGet(keys)
						if err != nil {
							errs <- err
						}
						for i := range again {
							if string(again[i]) != string(vals[i]) {
								errs <- fmt.Errorf("snapshot answered %q differently the second time", keys[i])
							}
						}
						it := snap.NewIterator(nil, nil)
						n := 0
						for it.Next() {
							n++
						}
						if err := it.Close(); err != nil {
							errs <- err
						}
						if n%keysPer != 0 {
							errs <- fmt.Errorf("iterator saw %d keys, not whole batches of %d", n, keysPer)
						}
						snap.Close()
					}
				}()
			}
			wg.Wait()
			close(done)
			rg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			st := db.Stats()
			t.Logf("%s", st)
			if st.Commits >= st.Writes && c.mode == ioengine.URing {
				t.Logf("no two batches shared a commit (%d writes, %d commits)", st.Writes, st.Commits)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
