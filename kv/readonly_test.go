package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// treeState is every file under dir with its bytes.
func treeState(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		m[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReadOnlyStore: a store opened ReadOnly reads tables and log beside a
// writer that holds it open, refuses every write, and creates, removes and
// changes nothing (not even LOCK); a damaged log is the same error as for
// a writer.
func TestReadOnlyStore(t *testing.T) {
	dir := testdir.Direct(t)
	c := config{mode: ioengine.URing, opts: Options{MemtableSize: 1 << 20, CacheSize: 256 << 10}}
	db := openTest(t, dir, c)
	for i := range 3000 {
		if err := db.Put([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprintf("v%05d", i))); err != nil {
			t.Fatal(err)
		}
		if i == 2000 {
			if err := db.Flush(); err != nil { // some in tables, the rest in the log
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, lockName)); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, dir)

	ro := c.opts
	ro.ReadOnly, ro.Logf = true, t.Logf
	check := func(r *DB, n int) {
		t.Helper()
		for _, i := range []int{0, 1999, 2001, n - 1} {
			if v, err := r.Get([]byte(fmt.Sprintf("k%05d", i))); err != nil || string(v) != fmt.Sprintf("v%05d", i) {
				t.Fatalf("read-only Get(k%05d): %q, %v", i, v, err)
			}
		}
	}
	r, err := Open(dir, ro)
	if err != nil {
		t.Fatal(err)
	}
	check(r, 3000)
	for name, err := range map[string]error{
		"Put": r.Put([]byte("x"), []byte("y")), "Delete": r.Delete([]byte("k00001")), "Flush": r.Flush(),
		"Compact": r.Compact(), "Checkpoint": r.Checkpoint(context.Background(), filepath.Join(t.TempDir(), "ck")),
	} {
		if !errors.Is(err, ErrOpenedReadOnly) {
			t.Errorf("%s on a read-only store: %v", name, err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if after := treeState(t, dir); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Fatal("a read-only open changed the store's files")
	}

	// Beside a writer that holds the store.
	w := openTest(t, dir, c)
	defer w.Close()
	if err := w.Put([]byte("k03000"), []byte("v03000")); err != nil {
		t.Fatal(err)
	}
	r, err = Open(dir, ro)
	if err != nil {
		t.Fatalf("read-only open beside a writer: %v", err)
	}
	check(r, 3001)
	r.Close()

	// Not a store: nothing is made.
	empty := t.TempDir()
	if _, err := Open(empty, ro); err == nil {
		t.Error("read-only open of an empty directory succeeded")
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("read-only open of an empty directory made %d files", len(ents))
	}
}

// TestReadOnlyDamagedLog: damage among the log's entries fails a
// read-only open as it fails a writer's, and nothing is cut.
func TestReadOnlyDamagedLog(t *testing.T) {
	dir := testdir.Direct(t)
	c := config{mode: ioengine.Syscall, opts: Options{}}
	db := openTest(t, dir, c)
	for i := range 5 {
		if err := db.Put([]byte(fmt.Sprintf("k%d", i)), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	seg := filepath.Join(dir, walDir, "00000000000000000001.seg")
	data, _ := os.ReadFile(seg)
	data[60] ^= 0xff
	os.WriteFile(seg, data, 0o644)
	for _, readOnly := range []bool{true, false} {
		_, err := Open(dir, Options{IOMode: ioengine.Syscall, ReadOnly: readOnly, Logf: t.Logf})
		if !errors.Is(err, ringstore.ErrCorrupt) {
			t.Errorf("ReadOnly %v: Open of a damaged log: %v", readOnly, err)
		}
	}
	if after, _ := os.ReadFile(seg); !bytes.Equal(after, data) {
		t.Error("the damaged segment was changed")
	}
}
