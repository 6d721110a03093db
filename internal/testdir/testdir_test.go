package testdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/ringstore/ringstore/directio"
)

func TestDirect(t *testing.T) {
	var dir string
	t.Run("use", func(t *testing.T) {
		dir = Direct(t)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 0 {
			t.Fatalf("Direct returned %s with %d entries, want it empty", dir, len(entries))
		}
		f, err := directio.OpenFile(filepath.Join(dir, "f"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			t.Fatalf("O_DIRECT open in the directory Direct returned: %v", err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	})
	if dir == "" {
		return // skipped: nothing to clean up
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after the test, Stat(%s) = %v, want it removed", dir, err)
	}
}
