package kv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/internal/testdir"
)

// residentBytes returns how much of path is in the page cache (mincore).
func residentBytes(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	page := int64(os.Getpagesize())
	vec := make([]byte, (st.Size()+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	var n int64
	for _, v := range vec {
		if v&1 != 0 {
			n += page
		}
	}
	return n
}

// TestTablesLeaveThePageCache: with O_DIRECT (the default), writing tables
// in flushes and compactions, opening them and compacting them leaves none
// of their pages in the page cache: blocks are read with O_DIRECT through
// the block cache, and what writing and opening put there is dropped.
func TestTablesLeaveThePageCache(t *testing.T) {
	dir := testdir.Direct(t)
	var sfs unix.Statfs_t
	if err := unix.Statfs(dir, &sfs); err != nil {
		t.Fatal(err)
	}
	if sfs.Type == unix.TMPFS_MAGIC {
		t.Skip("tmpfs: a file's pages are its storage and stay resident")
	}
	opts := crashOptions()
	opts.Logf, opts.Unsafe.NoSync = t.Logf, true // the log's syncs are not what this is about
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for round := range 4 {
		for i := range 2000 {
			k := fmt.Appendf(nil, "key%05d", (i*7919+round)%2000)
			if err := db.Put(k, fmt.Appendf(nil, "value %d of round %d, padded out to some length", i, round)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	st := db.Stats()
	if st.Compactions == 0 {
		t.Fatalf("no compaction ran: %+v", st)
	}
	// Read everything back too: iterators and MultiGet read with O_DIRECT.
	it := db.NewIterator(nil, nil)
	n := 0
	for it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != 2000 {
		t.Fatalf("iterated %d keys (%v), want 2000", n, err)
	}
	ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("no tables")
	}
	for _, p := range ssts {
		if r := residentBytes(t, p); r != 0 {
			t.Errorf("%s: %d bytes in the page cache after flushes, compactions and reads", filepath.Base(p), r)
		}
	}
	t.Logf("%d tables after %d flushes and %d compactions, none of them in the page cache", len(ssts), st.Flushes, st.Compactions)
}
