// Package ringstore holds what every engine of the toolkit shares at its
// surface: the one marker of corrupt data.
//
// Every package's corruption error — wal.ErrCorrupt and *wal.CorruptError,
// sstable.ErrCorrupt and *sstable.CorruptError, manifest.ErrCorrupt,
// arrowscan.ErrCorrupt and *arrowscan.CorruptError, a kv log entry that is
// not a batch — satisfies errors.Is(err, ringstore.ErrCorrupt), through
// every layer that wraps it, so a caller can tell damaged data from an I/O
// error or a bad argument without knowing which engine found it. The
// package's own sentinels and types keep working with errors.Is and
// errors.As as before; their messages are unchanged.
//
// The engines themselves are in the packages below this one: wal, kv,
// arrowscan, and the I/O core ioengine, bufpool, directio and uring.
package ringstore

import "errors"

// ErrCorrupt is what every corruption error of ringstore's packages is:
// stored bytes that fail their checks (a checksum, a magic number, a bound,
// a sequence that does not follow).
var ErrCorrupt = errors.New("ringstore: corrupt data")

// NewCorruptSentinel returns a sentinel error with message msg that is
// also ErrCorrupt: errors.Is(s, ErrCorrupt) holds, and errors.Is(err, s)
// holds only for errors that wrap s itself. Packages declare their own
// corruption sentinel with it.
func NewCorruptSentinel(msg string) error { return &corruptSentinel{msg: msg} }

type corruptSentinel struct{ msg string }

func (e *corruptSentinel) Error() string        { return e.msg }
func (e *corruptSentinel) Is(target error) bool { return target == ErrCorrupt }

// MarkCorrupt returns err marked as corruption: its message and its chain
// (errors.Is and errors.As to whatever err wraps) are unchanged, and
// errors.Is(MarkCorrupt(err), ErrCorrupt) holds. MarkCorrupt(nil) is nil.
func MarkCorrupt(err error) error {
	if err == nil || errors.Is(err, ErrCorrupt) {
		return err
	}
	return &corruptMark{err: err}
}

type corruptMark struct{ err error }

func (e *corruptMark) Error() string        { return e.err.Error() }
func (e *corruptMark) Unwrap() error        { return e.err }
func (e *corruptMark) Is(target error) bool { return target == ErrCorrupt }

// IsCorrupt reports whether err is, or wraps, a corruption error of any
// ringstore package.
func IsCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }
