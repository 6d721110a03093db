package kv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// TestCloneCheckpoint: a clone opens as a store of its own with the
// checkpoint's data; writing to it leaves the checkpoint as it was; a
// directory that is not a checkpoint is refused.
func TestCloneCheckpoint(t *testing.T) {
	root := testdir.Direct(t)
	db := openTest(t, filepath.Join(root, "db"), config{mode: ioengine.Syscall})
	db.Put([]byte("a"), []byte("1"))
	if err := db.Checkpoint(context.Background(), filepath.Join(root, "ck")); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, name := range []string{"c1", "c2"} {
		if err := CloneCheckpoint(filepath.Join(root, "ck"), filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
		c := openTest(t, filepath.Join(root, name), config{mode: ioengine.Syscall})
		if v, err := c.Get([]byte("a")); err != nil || string(v) != "1" {
			t.Fatalf("%s: %q %v", name, v, err)
		}
		c.Put([]byte("a"), []byte(name))
		c.Compact()
		c.Close()
	}
	if err := CloneCheckpoint(t.TempDir(), filepath.Join(root, "c3")); err == nil || !strings.Contains(err.Error(), "is not a checkpoint") {
		t.Errorf("clone of an empty directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "c3")); !os.IsNotExist(err) {
		t.Error("a refused clone made its directory")
	}
}
