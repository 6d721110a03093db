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
// Where a corruption error knows the file and the place, errors.As gives
// them in one form whichever package found the damage:
//
//	var ce *ringstore.CorruptError
//	if errors.As(err, &ce) {
//		log.Printf("damage in %s at %d: %s", ce.Path, ce.Offset, ce.What)
//	}
//
// The package types (*wal.CorruptError, *sstable.CorruptError,
// *manifest.CorruptError, *arrowscan.CorruptError) keep their own fields and
// messages and answer errors.As for a *CorruptError with a new one made of
// their path, offset and detail (an As method). A kv log entry that is not
// a batch gives one too, and so do the decoders of packages state (stored
// values, lists, the registry) and nexmark (checkpoint metas, final-stage
// snapshots, stored operator values); state's key and codec errors
// (state.ErrBadKey, state.ErrBadValue, a codec's own error) are
// ErrCorrupt without a place.
//
// The engines themselves are in the packages below this one: wal, kv,
// arrowscan, and the I/O core ioengine, bufpool, directio and uring.
package ringstore

import (
	"errors"
	"strconv"
)

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

// CorruptError names damaged stored bytes: the file, the byte offset in it
// and what was wrong. Path is "" when the bytes did not come from a file
// of their own (a value read through kv, a key given by a caller); Offset
// is -1 when no single offset applies, otherwise the offset of the bad
// bytes in Path (or in the decoded buffer when Path is ""), the start of
// the field or record being decoded when the exact byte is unknown. What
// says what was wrong, in lowercase, without the path or offset.
//
// A *CorruptError is ErrCorrupt: errors.Is(err, ErrCorrupt) holds.
type CorruptError struct {
	Path   string
	Offset int64
	What   string
}

// Error returns "<path>: offset <n>: <what>", leaving out the path when it
// is "" and the offset when it is negative.
func (e *CorruptError) Error() string {
	what := e.What
	if what == "" {
		what = "corrupt data"
	}
	s := ""
	if e.Path != "" {
		s = e.Path + ": "
	}
	if e.Offset >= 0 {
		s += "offset " + strconv.FormatInt(e.Offset, 10) + ": "
	}
	return s + what
}

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }
