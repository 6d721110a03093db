package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// newEngine returns an engine on mode, closed at cleanup (testengine.New:
// skips only where io_uring is refused outright).
func newEngine(t *testing.T, mode ioengine.IOMode) *ioengine.Engine {
	t.Helper()
	return testengine.New(t, mode, ioengine.Options{})
}

// readPlanned plans the block reads of keys with MayContain and BlockFor
// (no I/O), sends them in one ReadBatch with O_DIRECT into aligned memory,
// and decodes each block once. It returns the blocks by offset and the
// number of reads.
func readPlanned(t *testing.T, r *Reader, e *ioengine.Engine, fd int, keys [][]byte) (map[uint64]Block, []error, int) {
	t.Helper()
	seen := map[uint64]bool{}
	var handles []BlockHandle
	total := 0
	for _, k := range keys {
		if !r.MayContain(k) {
			continue
		}
		if h, ok := r.BlockFor(k); ok && !seen[h.Offset] {
			seen[h.Offset] = true
			handles = append(handles, h)
			total += int(h.Len)
		}
	}
	if total == 0 {
		return nil, nil, 0
	}
	mem, err := directio.Alloc(total)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { directio.Free(mem) })
	reqs := make([]ioengine.Request, len(handles))
	at := 0
	for i, h := range handles {
		reqs[i] = ioengine.Request{Op: ioengine.OpRead, Fd: fd, Off: int64(h.Offset), Buf: mem[at : at+int(h.Len)]}
		at += int(h.Len)
	}
	if err := e.ReadBatch(reqs); err != nil {
		t.Fatalf("ReadBatch of %d blocks: %v", len(reqs), err)
	}
	blocks := map[uint64]Block{}
	var errs []error
	for i, h := range handles {
		if reqs[i].Err != nil || reqs[i].N != int(h.Len) {
			t.Fatalf("read of block %+v: %d bytes, %v", h, reqs[i].N, reqs[i].Err)
		}
		b, err := r.DecodeBlock(h, reqs[i].Buf)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		blocks[h.Offset] = b
	}
	return blocks, errs, len(reqs)
}

// TestBatchedDirectRead is kv's MultiGet path: plan a batch of keys, read
// their blocks with O_DIRECT in one batch on the real io_uring ring and on
// the syscall backend, decode and look up.
func TestBatchedDirectRead(t *testing.T) {
	dir := testdir.Direct(t)
	rng := rand.New(rand.NewPCG(4, 4))
	es := genEntries(rng, 2000)
	path := filepath.Join(dir, "000002.sst")
	writeFile(t, path, es, Options{})
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := directio.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := newest(es)
	var present [][]byte
	for k := range want {
		present = append(present, []byte(k))
	}

	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		t.Run("backend="+mode.String(), func(t *testing.T) {
			e := newEngine(t, mode)
			for batch := range 5 {
				var keys [][]byte
				for i := range 64 {
					if i%4 == 3 {
						keys = append(keys, fmt.Appendf(nil, "user/%08d/absent", rng.IntN(6000)))
					} else {
						keys = append(keys, present[rng.IntN(len(present))])
					}
				}
				before := e.Stats()
				blocks, errs, reads := readPlanned(t, r, e, int(f.Fd()), keys)
				if len(errs) > 0 {
					t.Fatalf("decoding blocks read by %s: %v", mode, errs)
				}
				for _, k := range keys {
					w, ok := want[string(k)]
					var found bool
					var v []byte
					var kind Kind
					var seq uint64
					if h, hit := r.BlockFor(k); hit && r.MayContain(k) {
						v, kind, seq, found = blocks[h.Offset].Get(k)
					}
					if found != ok || (ok && (kind != w.key.Kind || seq != w.key.Seq || !bytes.Equal(v, w.value))) {
						t.Fatalf("batched Get(%q) = %v %s %d; want %v %s", k, found, kind, seq, ok, w.key)
					}
				}
				after := e.Stats()
				if batch == 0 {
					t.Logf("%s: %d keys, %d block reads in one ReadBatch: %d enters, %d SQEs, %d resubmits, %d syscalls",
						mode, len(keys), reads, after.Enters-before.Enters, after.SQEs-before.SQEs, after.Resubmits-before.Resubmits, after.Syscalls-before.Syscalls)
				}
			}
		})
	}
}

// TestBatchedDirectReadCorrupt damages one block on disk and reads it back
// through the ring: DecodeBlock names the file and an offset inside that
// block, and the other blocks of the batch decode.
func TestBatchedDirectReadCorrupt(t *testing.T) {
	dir := testdir.Direct(t)
	rng := rand.New(rand.NewPCG(5, 5))
	es := genEntries(rng, 400)
	path := filepath.Join(dir, "000003.sst")
	writeFile(t, path, es, Options{})
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var keys [][]byte
	for k := range newest(es) {
		keys = append(keys, []byte(k))
	}
	victim, _ := r.BlockFor(keys[len(keys)/2]) // a block the batch reads
	wf, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	off := int64(victim.Offset) + 100
	if _, err := wf.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x10
	if _, err := wf.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := wf.Sync(); err != nil {
		t.Fatal(err)
	}
	wf.Close()

	f, err := directio.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := newEngine(t, ioengine.URing)
	blocks, errs, reads := readPlanned(t, r, e, int(f.Fd()), keys)
	if len(errs) != 1 {
		t.Fatalf("%d decode errors, want 1: %v", len(errs), errs)
	}
	var ce *CorruptError
	if !errors.As(errs[0], &ce) || ce.Path != path || ce.Offset < int64(victim.Offset) || ce.Offset >= int64(victim.Offset+victim.Len) {
		t.Fatalf("damaged block %+v: %v", victim, errs[0])
	}
	if len(blocks) != reads-1 {
		t.Fatalf("%d of %d blocks decoded", len(blocks), reads)
	}
	t.Logf("damaged block: %v", errs[0])
}
