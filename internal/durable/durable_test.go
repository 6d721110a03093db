package durable

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// TestFsync: a file and a directory are flushed with no engine, on the
// syscall backend and on an inline ring that parks its waits; on the ring
// the fsync is a request of the engine. A closed file and a missing
// directory are errors, the directory's naming it.
func TestFsync(t *testing.T) {
	engines := map[string]func(t *testing.T) *ioengine.Engine{
		"none":    func(*testing.T) *ioengine.Engine { return nil },
		"syscall": func(t *testing.T) *ioengine.Engine { return testengine.New(t, ioengine.Syscall, ioengine.Options{}) },
		"uring-park": func(t *testing.T) *ioengine.Engine {
			return testengine.New(t, ioengine.URing, ioengine.Options{Inline: true, ParkWaits: true})
		},
	}
	for name, mk := range engines {
		t.Run(name, func(t *testing.T) {
			eng := mk(t)
			dir := t.TempDir()
			f, err := os.Create(filepath.Join(dir, "f"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("durable"); err != nil {
				t.Fatal(err)
			}
			var before uint64
			if eng != nil {
				before = eng.Stats().Requests
			}
			if err := Fsync(f, eng); err != nil {
				t.Fatalf("Fsync: %v", err)
			}
			if err := SyncDirVia(dir, eng); err != nil {
				t.Fatalf("SyncDirVia: %v", err)
			}
			if eng != nil && eng.Backend() == ioengine.BackendURing {
				if n := eng.Stats().Requests - before; n != 2 {
					t.Errorf("the ring ran %d requests for a file's and a directory's fsync, want 2", n)
				}
			}
			f.Close()
			if err := Fsync(f, eng); err == nil {
				t.Error("Fsync of a closed file succeeded")
			}
			missing := filepath.Join(dir, "missing")
			if err := SyncDirVia(missing, eng); err == nil || !strings.Contains(err.Error(), missing) {
				t.Errorf("SyncDirVia of a missing directory: %v, want an error naming it", err)
			}
		})
	}
}
