package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ringstore/ringstore/wal/internal/format"
)

const lockName = "wal.lock"

// readMeta returns the first seq recorded in dir, or 0 when there is no
// meta file.
func readMeta(dir string) (uint64, error) {
	first, _, err := readMetaSlot(dir)
	return first, err
}

// readMetaSlot is readMeta that also returns the slot holding the first
// seq, or -1 when the file is absent or has the one-record layout.
func readMetaSlot(dir string) (uint64, int, error) {
	path := filepath.Join(dir, format.MetaName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, -1, nil
	}
	if err != nil {
		return 0, -1, fmt.Errorf("wal: %w", err)
	}
	first, slot, off, err := format.DecodeMetaFile(b)
	if err != nil {
		return 0, -1, &CorruptError{Path: path, Offset: off, Err: err}
	}
	if len(b) != format.MetaFileSize {
		slot = -1
	}
	return first, slot, nil
}
