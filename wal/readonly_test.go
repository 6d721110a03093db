package wal

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/ringstore/ringstore/wal/internal/format"
)

// dirState is every file of dir with its bytes, to tell whether anything
// changed.
func dirState(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

func names(m map[string][]byte) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// TestReadOnly: a log opened ReadOnly beside a writer that holds it open
// reads the entries, refuses appends and truncations, takes no lock,
// creates no file, and leaves a torn tail where it is.
func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	path, offs := writeEntries(t, dir, tailOpts(), 30)
	// A torn tail: the start of a group that never finished.
	data, _ := os.ReadFile(path)
	copy(data[offs[30]:], format.AppendEntry(nil, 31, payloadFor(31))[:20])
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, lockName)); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, dir)

	ro := tailOpts()
	ro.ReadOnly = true
	l, err := Open(dir, ro)
	if err != nil {
		t.Fatal(err)
	}
	checkRange(t, l, 1, 30)
	if _, err := l.Append([]byte("x")); !errors.Is(err, ErrOpenedReadOnly) {
		t.Errorf("Append: %v, want ErrOpenedReadOnly", err)
	}
	if err := l.TruncateFront(5); !errors.Is(err, ErrOpenedReadOnly) {
		t.Errorf("TruncateFront: %v, want ErrOpenedReadOnly", err)
	}
	if len(l.Recovery().Cuts) != 0 {
		t.Errorf("a read-only open cut: %+v", l.Recovery())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if after := dirState(t, dir); !maps.EqualFunc(before, after, bytes.Equal) {
		t.Fatalf("a read-only open changed the directory: %v before, %v after", names(before), names(after))
	}

	// Beside a writer that holds the log (and its lock): the writer cuts
	// the tail and appends; a reader opened after sees what was written.
	w, err := Open(dir, tailOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := 31; i <= 40; i++ {
		if _, err := w.Append(payloadFor(uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Open(dir, ro)
	if err != nil {
		t.Fatalf("read-only open beside a writer: %v", err)
	}
	defer r.Close()
	checkRange(t, r, 1, 40)

	// Damage is still damage.
	data, _ = os.ReadFile(path)
	data[offs[10]+EntryHeaderSize] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, ro); !errors.Is(err, ErrCorrupt) {
		t.Errorf("read-only open of a damaged log: %v", err)
	}
}

// TestReadOnlyNeedsTheDirectory: ReadOnly does not create a missing log.
func TestReadOnlyNeedsTheDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := Open(missing, Options{ReadOnly: true}); err == nil {
		t.Fatal("opened a log that does not exist")
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("read-only open created %s", missing)
	}
}
