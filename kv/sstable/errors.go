package sstable

import (
	"errors"
	"fmt"

	"github.com/ringstore/ringstore"
)

var (
	// ErrCorrupt is wrapped by every *CorruptError: errors.Is(err,
	// ErrCorrupt) tells a damaged file from an I/O error.
	ErrCorrupt = ringstore.NewCorruptSentinel("sstable: corrupt")
	// ErrOutOfOrder is returned by Writer.Add for a key that does not sort
	// strictly after the previous one.
	ErrOutOfOrder = errors.New("sstable: keys out of order")
	// ErrFinished is returned by Writer.Add and Writer.Finish after Finish
	// (or after a write failed).
	ErrFinished = errors.New("sstable: writer finished")
	// ErrBadOptions is wrapped by errors about Options fields.
	ErrBadOptions = errors.New("sstable: bad options")
	// ErrTooLarge is returned for a key or value over MaxKeyLen or
	// MaxValueLen.
	ErrTooLarge = errors.New("sstable: key or value too large")
	// ErrBadHandle is returned by Reader.DecodeBlock for a handle that is
	// not one of the file's data blocks, or a buffer of the wrong length.
	ErrBadHandle = errors.New("sstable: bad block handle")
)

// CorruptError reports damage found in an SST file: which file, the file
// offset of the bad bytes (the start of the section or entry being decoded
// when the exact byte is unknown), and what was wrong. errors.As gives it
// as a *ringstore.CorruptError too.
type CorruptError struct {
	Path   string
	Offset int64
	What   string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("sstable: corrupt file %s at offset %d: %s", e.Path, e.Offset, e.What)
}

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// As sets a **ringstore.CorruptError target to e's path, offset and what.
func (e *CorruptError) As(target any) bool {
	t, ok := target.(**ringstore.CorruptError)
	if ok {
		*t = &ringstore.CorruptError{Path: e.Path, Offset: e.Offset, What: e.What}
	}
	return ok
}

// site names where a decoder's input lies: the file and the file offset of
// its first byte, so errors can name absolute offsets.
type site struct {
	path string
	base int64
}

func (s site) corrupt(rel int, format string, args ...any) *CorruptError {
	return &CorruptError{Path: s.path, Offset: s.base + int64(rel), What: fmt.Sprintf(format, args...)}
}
