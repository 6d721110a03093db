package arrowscan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ringstore/ringstore"
)

// Errors. A *CorruptError, *ColumnError and every read failure unwrap to
// one of these, so errors.Is works through the layers.
var (
	// ErrCorrupt: the file is not a well-formed Arrow IPC file (bad magic,
	// truncated, a flatbuffer offset out of bounds, a block outside the
	// file, buffers outside their body, ...).
	ErrCorrupt = ringstore.NewCorruptSentinel("arrowscan: corrupt arrow file")
	// ErrUnknownColumn: Scan was asked for a column the schema does not have.
	ErrUnknownColumn = errors.New("arrowscan: unknown column")
	// ErrBadOptions: Options or Scan arguments that cannot be used.
	ErrBadOptions = errors.New("arrowscan: bad options")
	// ErrClosed: the File or Scanner was closed.
	ErrClosed = errors.New("arrowscan: closed")
	// ErrBusy: File.Close while Scanners of the file are still open.
	ErrBusy = errors.New("arrowscan: file has open scanners")
)

// CorruptError says what is wrong with a file and where: the file, the
// part of it (footer, schema, record batch 3, dictionary batch 0), the file
// offset of the bad bytes (-1 when no single offset applies), and the
// detail. It unwraps to ErrCorrupt and to the cause, if any, and errors.As
// gives it as a *ringstore.CorruptError too (its What is the part, the
// detail and the cause).
type CorruptError struct {
	Path   string
	Part   string
	Offset int64
	Detail string
	Err    error // underlying cause (e.g. arrow-go's decode error); may be nil
}

func (e *CorruptError) Error() string {
	s := "arrowscan: " + e.Path + ": "
	if e.Part != "" {
		s += e.Part
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf(" at offset %d", e.Offset)
	}
	return s + e.detail()
}

// detail is ": <Detail>: <Err>", each part left out when empty.
func (e *CorruptError) detail() string {
	s := ""
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// As sets a **ringstore.CorruptError target to e's path and offset, with
// the part, the detail and the cause as its What.
func (e *CorruptError) As(target any) bool {
	t, ok := target.(**ringstore.CorruptError)
	if ok {
		what := e.Part + e.detail()
		if e.Part == "" {
			what = strings.TrimPrefix(what, ": ")
		}
		*t = &ringstore.CorruptError{Path: e.Path, Offset: e.Offset, What: what}
	}
	return ok
}

func (e *CorruptError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrCorrupt}
	}
	return []error{ErrCorrupt, e.Err}
}

// ReadError is a failed read of a file: which file, which part, the byte
// range, and the cause (an *ioengine.OpError, *os.PathError, a bufpool
// error...), which it unwraps to so errors.Is(err, unix.EIO) works.
type ReadError struct {
	Path   string
	Part   string
	Offset int64
	Len    int64
	Err    error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("arrowscan: %s: %s: read of %d bytes at offset %d: %v", e.Path, e.Part, e.Len, e.Offset, e.Err)
}

func (e *ReadError) Unwrap() error { return e.Err }

// corrupt is the short way to make a *CorruptError.
func corrupt(path, part string, off int64, format string, args ...any) *CorruptError {
	return &CorruptError{Path: path, Part: part, Offset: off, Detail: fmt.Sprintf(format, args...)}
}

// errFrameShort: a pool frame held fewer bytes than the span asked for (the
// file is shorter than when it was registered).
var errFrameShort = errors.New("pool frame shorter than the span")
