package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

const ckptWriters = 4

func ckptKey(w, i int) []byte { return []byte(fmt.Sprintf("w%d/%08d", w, i)) }

func ckptValue(w, i int) []byte {
	v := fmt.Appendf(nil, "value of writer %d write %d:", w, i)
	for len(v) < 120+i%200 {
		v = append(v, byte('a'+len(v)%26))
	}
	return v
}

// ckptPrefixes reads db whole and returns, for each writer, how many of its
// sequential writes it holds, failing unless they are exactly writes
// 0..n-1 of that writer, each with its value, and nothing else.
func ckptPrefixes(t *testing.T, db *DB, what string) [ckptWriters]int {
	t.Helper()
	var n [ckptWriters]int
	it := db.NewIterator(nil, nil)
	for it.Next() {
		var w, i int
		if c, err := fmt.Sscanf(string(it.Key()), "w%d/%d", &w, &i); c != 2 || err != nil || w < 0 || w >= ckptWriters {
			it.Close()
			t.Fatalf("%s: key %q is not one this test writes", what, it.Key())
		}
		// Keys of a writer sort in write order, so the iterator meets
		// them as 0, 1, 2, ...: a gap is a write missing before a later
		// one that is there.
		if i != n[w] || !bytes.Equal(it.Key(), ckptKey(w, i)) {
			it.Close()
			t.Fatalf("%s: writer %d: holds write %d (%q) but not write %d: not a prefix of the writer's writes", what, w, i, it.Key(), n[w])
		}
		if !bytes.Equal(it.Value(), ckptValue(w, i)) {
			it.Close()
			t.Fatalf("%s: %s = %.60q, want %.60q", what, it.Key(), it.Value(), ckptValue(w, i))
		}
		n[w]++
	}
	if err := it.Close(); err != nil {
		t.Fatalf("%s: iterator: %v", what, err)
	}
	// The point reads must agree: the last write of each writer there,
	// the first one not there absent.
	var keys [][]byte
	for w := range ckptWriters {
		if n[w] > 0 {
			keys = append(keys, ckptKey(w, n[w]-1))
		}
		keys = append(keys, ckptKey(w, n[w]))
	}
	vals, found, err := db.MultiGet(keys)
	if err != nil {
		t.Fatalf("%s: MultiGet: %v", what, err)
	}
	for j, k := range keys {
		var w, i int
		fmt.Sscanf(string(k), "w%d/%d", &w, &i)
		if want := i < n[w]; found[j] != want || (want && !bytes.Equal(vals[j], ckptValue(w, i))) {
			t.Fatalf("%s: MultiGet %s: found=%v, the iterator: found=%v", what, k, found[j], want)
		}
	}
	return n
}

// TestCheckpointConcurrentWrites takes checkpoints while writers go on:
// each checkpoint opens as a store of its own holding every write
// acknowledged before Checkpoint was called and, for each writer, a prefix of
// its writes; the original goes on taking writes and the two stores are
// independent afterwards.
func TestCheckpointConcurrentWrites(t *testing.T) {
	for _, c := range []config{
		{"uring-cache", ioengine.URing, crashOptions()},
		{"syscall-nocache", ioengine.Syscall, func() Options { o := crashOptions(); o.NoBlockCache = true; return o }()},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := testdir.Direct(t)
			ckRoot := testdir.Direct(t)
			c.opts.Unsafe.NoSync = true // the writers' pace, not durability, is under test here
			db := openTest(t, dir, c)

			var acked [ckptWriters]atomic.Int64 // writes acknowledged: 0..acked-1
			stop := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, ckptWriters)
			for w := range ckptWriters {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						if err := db.Put(ckptKey(w, i), ckptValue(w, i)); err != nil {
							errs <- fmt.Errorf("writer %d write %d: %w", w, i, err)
							return
						}
						acked[w].Store(int64(i + 1))
					}
				}()
			}
			waitFor := func(n int64) {
				for {
					select {
					case err := <-errs:
						t.Fatal(err)
					default:
					}
					done := true
					for w := range acked {
						done = done && acked[w].Load() >= n
					}
					if done {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
			type ckpt struct {
				dir    string
				before [ckptWriters]int64
				after  [ckptWriters]int64
			}
			var ckpts []ckpt
			for k := range 3 {
				waitFor(int64(200 * (k + 1)))
				var ck ckpt
				ck.dir = filepath.Join(ckRoot, fmt.Sprintf("ckpt%d", k))
				for w := range acked {
					ck.before[w] = acked[w].Load()
				}
				if err := db.Checkpoint(context.Background(), ck.dir); err != nil {
					t.Fatalf("Checkpoint(%s): %v", ck.dir, err)
				}
				for w := range acked {
					ck.after[w] = acked[w].Load()
				}
				ckpts = append(ckpts, ck)
			}
			waitFor(800)
			close(stop)
			wg.Wait()
			select {
			case err := <-errs:
				t.Fatal(err)
			default:
			}

			// A checkpoint directory that exists is refused, and left alone.
			err := db.Checkpoint(context.Background(), ckpts[0].dir)
			if err == nil || !strings.Contains(err.Error(), ckpts[0].dir) || !strings.Contains(err.Error(), "exists") {
				t.Errorf("Checkpoint into an existing directory: %v, want an error naming %s as existing", err, ckpts[0].dir)
			}
			if _, err := os.Stat(ckpts[0].dir + ".tmp"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused Checkpoint left %s.tmp: %v", ckpts[0].dir, err)
			}

			// The original holds every acknowledged write.
			var total [ckptWriters]int
			for w := range acked {
				total[w] = int(acked[w].Load())
			}
			n := ckptPrefixes(t, db, "the original")
			if n != total {
				t.Fatalf("the original holds %v writes per writer, %v were acknowledged", n, total)
			}
			st := db.Stats()
			t.Logf("original: %v writes per writer, %d flushes, %d compactions", n, st.Flushes, st.Compactions+st.TrivialMoves)

			for k, ck := range ckpts {
				what := fmt.Sprintf("checkpoint %d", k)
				cdb := openTest(t, ck.dir, c)
				n := ckptPrefixes(t, cdb, what)
				for w := range n {
					if int64(n[w]) < ck.before[w] {
						t.Errorf("%s: writer %d: %d writes there, %d were acknowledged before Checkpoint was called", what, w, n[w], ck.before[w])
					}
					if int64(n[w]) > ck.after[w]+1 {
						t.Errorf("%s: writer %d: %d writes there, only %d were acknowledged when Checkpoint returned", what, w, n[w], ck.after[w])
					}
				}
				t.Logf("%s: %v writes per writer (acknowledged before: %v, after: %v)", what, n, ck.before, ck.after)
				// The checkpoint is a store of its own: a write to it is
				// not in the original, and survives its reopen.
				key := []byte("checkpoint-only")
				if err := cdb.Put(key, []byte(what)); err != nil {
					t.Fatalf("%s: Put: %v", what, err)
				}
				if err := cdb.Close(); err != nil {
					t.Fatalf("%s: Close: %v", what, err)
				}
				cdb = openTest(t, ck.dir, c)
				if v, err := cdb.Get(key); err != nil || string(v) != what {
					t.Errorf("%s: after a reopen, Get(%s) = %q, %v", what, key, v, err)
				}
				if err := cdb.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := db.Get(key); !errors.Is(err, ErrNotFound) {
					t.Errorf("the original: Get(%s) of a key written to %s: %v, want ErrNotFound", key, what, err)
				}
			}

			// The original goes on after the checkpoints, and across a reopen.
			if err := db.Put([]byte("after"), []byte("checkpoints")); err != nil {
				t.Fatal(err)
			}
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = openTest(t, dir, c)
			defer db.Close()
			if v, err := db.Get([]byte("after")); err != nil || string(v) != "checkpoints" {
				t.Errorf("the original after a reopen: Get(after) = %q, %v", v, err)
			}
			if err := db.Delete([]byte("after")); err != nil {
				t.Fatal(err)
			}
			if n := ckptPrefixes(t, db, "the original, reopened"); n != total {
				t.Errorf("the original, reopened, holds %v writes per writer, %v were acknowledged", n, total)
			}
		})
	}
}

// TestCheckpointKeepsSiblingTmp: Checkpoint(dir) builds the copy in
// dir+".tmp"; a directory of that name that the caller made is not the
// checkpoint's to remove.
func TestCheckpointKeepsSiblingTmp(t *testing.T) {
	c := config{"syscall", ioengine.Syscall, crashOptions()}
	db := openTest(t, testdir.Direct(t), c)
	defer db.Close()
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "backup")
	precious := filepath.Join(dst+".tmp", "precious")
	if err := os.MkdirAll(filepath.Dir(precious), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(precious, []byte("not the store's"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := db.Checkpoint(context.Background(), dst)
	if _, serr := os.Stat(precious); serr != nil {
		t.Fatalf("Checkpoint(%s) removed the caller's %s; Checkpoint returned %v: %v", dst, dst+".tmp", err, serr)
	}
	if err == nil {
		cdb := openTest(t, dst, c)
		defer cdb.Close()
		if v, err := cdb.Get([]byte("k")); err != nil || string(v) != "v" {
			t.Errorf("checkpoint: Get(k) = %q, %v", v, err)
		}
	}
}
