package kv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// TestDisableWAL: without a log a store writes no log file; Close flushes
// what was written; a copy of the files taken without Close (a crash) opens
// with what the last flush held; and a log an earlier open left is replayed
// and flushed before writes go unlogged.
func TestDisableWAL(t *testing.T) {
	dir := testdir.Direct(t)
	opts := Options{DisableWAL: true, MemtableSize: 1 << 20}
	db := openTest(t, dir, config{mode: ioengine.URing, opts: opts})
	for i := range 100 {
		if err := db.Put([]byte(fmt.Sprintf("k%03d", i)), []byte("first")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, walDir)); !os.IsNotExist(err) {
		t.Fatalf("a store without a log made %s: %v", walDir, err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := db.Put([]byte(fmt.Sprintf("k%03d", i)), []byte("second")); err != nil {
			t.Fatal(err)
		}
	}
	// A crash now: the files as they are, without Close.
	crashed := testdir.Direct(t)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() == lockName {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(crashed, e.Name()), b, 0o644)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(dir, want string) {
		t.Helper()
		db := openTest(t, dir, config{mode: ioengine.Syscall, opts: opts})
		defer db.Close()
		for i := range 100 {
			if v, err := db.Get([]byte(fmt.Sprintf("k%03d", i))); err != nil || string(v) != want {
				t.Fatalf("%s: k%03d = %q, %v; want %q", dir, i, v, err, want)
			}
		}
	}
	check(dir, "second")    // Close flushed
	check(crashed, "first") // the crash lost the unflushed writes: the state of the last flush

	// A store written with its log, then opened without: nothing is lost.
	logged := testdir.Direct(t)
	db = openTest(t, logged, config{mode: ioengine.Syscall, opts: Options{MemtableSize: 1 << 20}})
	if err := db.Put([]byte("logged"), []byte("yes")); err != nil {
		t.Fatal(err)
	}
	// Left open: its lock is released by closing the file only, the write
	// only in the log.
	db.log.Close()
	db.lock.Close()
	db2 := openTest(t, logged, config{mode: ioengine.Syscall, opts: opts})
	if v, err := db2.Get([]byte("logged")); err != nil || string(v) != "yes" {
		t.Fatalf("the log's write: %q, %v", v, err)
	}
	if st := db2.Stats(); st.Flushes != 1 {
		t.Errorf("%d flushes at Open: the log's writes must be flushed before unlogged writes", st.Flushes)
	}
	db2.Close()
}
