//go:build unix

package wal

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/internal/crashfs"
)

// mapFile maps size bytes of the file at path read-only. The mapping keeps
// the file's pages, so the descriptor is closed at once.
func mapFile(path string, size int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	return b, nil
}

func unmapFile(b []byte) { _ = unix.Munmap(b) }

// lockDir takes an exclusive advisory lock on dir's lock file so that two
// logs (in this process or another) never share a directory.
func lockDir(path string) (*os.File, error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	if statErr != nil {
		crashfs.Created(path, 0)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, fmt.Errorf("%w: %s is locked", ErrLocked, path)
		}
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	return f, nil
}
