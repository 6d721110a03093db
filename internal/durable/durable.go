// Package durable makes directory changes durable: a directory synced
// after a change to its entries, and directories made with their parents
// synced, so a crash cannot take away a store's or a log's directory once
// it acknowledged a write in it. Each change is reported to the crash-state
// recorder (internal/crashfs).
package durable

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/ringstore/ringstore/internal/crashfs"
	"github.com/ringstore/ringstore/ioengine"
)

// Fsync flushes f (a file or a directory) to the device: as an fsync on
// eng's ring where eng runs on io_uring, so that a caller whose engine
// parks its waits (ioengine.Options.ParkWaits) frees its P while the device
// works; with fsync(2) where eng is nil or on the syscall backend.
func Fsync(f *os.File, eng *ioengine.Engine) error {
	if eng == nil || eng.Backend() == ioengine.BackendSyscall {
		return f.Sync()
	}
	r := []ioengine.Request{{Op: ioengine.OpFsync, Fd: int(f.Fd())}}
	err := eng.Do(r)
	runtime.KeepAlive(f)
	return err
}

// SyncDir flushes dir's entries.
func SyncDir(dir string) error { return SyncDirVia(dir, nil) }

// SyncDirVia flushes dir's entries, through eng as Fsync does.
func SyncDirVia(dir string, eng *ioengine.Engine) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := Fsync(d, eng); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	crashfs.SyncedDir(dir)
	return nil
}

// MkdirAll makes dir and its missing parents and, unless noSync, syncs the
// parent of each directory it made, outermost first.
func MkdirAll(dir string, noSync bool) error {
	dir = filepath.Clean(dir)
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		made = append(made, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(made) - 1; i >= 0 && !noSync; i-- {
		crashfs.MadeDir(made[i])
		if err := SyncDir(filepath.Dir(made[i])); err != nil {
			return err
		}
	}
	return nil
}
