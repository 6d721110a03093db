package directio

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
)

// BlockSize is the alignment ringstore uses for buffers, file offsets and
// lengths. It is a multiple of every O_DIRECT alignment ringstore supports.
const BlockSize = 4096

var (
	// ErrNotSupported is wrapped by the errors of OpenFile, Discover and
	// Check when a file system refuses O_DIRECT.
	ErrNotSupported = errors.New("directio: O_DIRECT not supported")

	// ErrNotAllocated is wrapped by the error of Free when its argument is
	// not a live buffer from Alloc: never allocated, freed already, or not
	// the full slice.
	ErrNotAllocated = errors.New("directio: free of memory not returned by Alloc")
)

// Alignment is the alignment O_DIRECT requires for one file.
type Alignment struct {
	Memory uint32 // required alignment of buffer addresses
	Offset uint32 // required alignment of file offsets and lengths

	// Source says how the values were found: "statx" when the kernel
	// reported STATX_DIOALIGN, "logical block size (sysfs)" or
	// "logical block size (BLKSSZGET)" when they were read from the device,
	// and "assumed 4096" when nothing better was available.
	Source string
}

// String returns the alignment as "memory 512, offset 512, from statx".
func (a Alignment) String() string {
	return fmt.Sprintf("memory %d, offset %d, from %s", a.Memory, a.Offset, a.Source)
}

// fits reports whether buffers, offsets and lengths aligned to BlockSize
// satisfy a.
func (a Alignment) fits() bool {
	return a.Memory != 0 && a.Offset != 0 && BlockSize%a.Memory == 0 && BlockSize%a.Offset == 0
}

// assumed is what Discover returns when neither the kernel nor the device
// says anything: BlockSize is what ringstore uses anyway.
var assumed = Alignment{Memory: BlockSize, Offset: BlockSize, Source: "assumed 4096"}

// NotSupportedError reports that a file system refused O_DIRECT for a path.
// errors.Is matches it against both ErrNotSupported and Err.
type NotSupportedError struct {
	Op     string // the call that found out: "open", "statx", "read", ...
	Path   string // the file or directory
	FSType string // the file system, as FSType names it; "" when unknown
	Err    error  // the errno from Op, or why Op's answer means no O_DIRECT
}

func (e *NotSupportedError) Error() string {
	var b strings.Builder
	b.WriteString("directio: ")
	b.WriteString(e.Op)
	b.WriteString(" ")
	b.WriteString(e.Path)
	b.WriteString(": O_DIRECT not supported")
	if e.FSType != "" {
		b.WriteString(" on ")
		b.WriteString(e.FSType)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns ErrNotSupported and, when set, Err.
func (e *NotSupportedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrNotSupported}
	}
	return []error{ErrNotSupported, e.Err}
}

// checkError is the error of Check: it names the directory that was checked
// and keeps the cause for errors.Is and errors.As.
type checkError struct {
	dir string
	err error
}

func (e *checkError) Error() string {
	// The cause usually carries the package prefix too; say it once.
	return "directio: check " + e.dir + ": " + strings.TrimPrefix(e.err.Error(), "directio: ")
}

func (e *checkError) Unwrap() error { return e.err }

// IsAligned reports whether the address of b's first byte and len(b) are both
// multiples of align. An empty slice is judged by the address it would start
// at. IsAligned returns false when align is not positive.
func IsAligned(b []byte, align int) bool {
	if align <= 0 {
		return false
	}
	return addressOf(b)%uintptr(align) == 0 && len(b)%align == 0
}

// roundUp returns size rounded up to a multiple of BlockSize, or an error
// when size is not positive or the result overflows int.
func roundUp(size int) (int, error) {
	if size <= 0 {
		return 0, fmt.Errorf("directio: alloc of %d bytes: size must be positive", size)
	}
	if size > math.MaxInt-(BlockSize-1) {
		return 0, fmt.Errorf("directio: alloc of %d bytes: size too large", size)
	}
	return (size + BlockSize - 1) &^ (BlockSize - 1), nil
}

// live records every buffer Alloc has returned and Free has not yet taken
// back, keyed by the address of its first byte, with its length as the
// value. Free consults it so that a foreign slice or a second Free is an
// error instead of an munmap of memory the process still uses. On systems
// where Alloc uses the Go heap, the pointer keys also keep the buffers alive
// until Free, which gives them the same lifetime as mmap'd memory.
var live struct {
	mu   sync.Mutex
	bufs map[*byte]int // guarded by mu
}

// track records b as returned by Alloc.
func track(b []byte) {
	live.mu.Lock()
	defer live.mu.Unlock()
	if live.bufs == nil {
		live.bufs = make(map[*byte]int)
	}
	live.bufs[&b[0]] = len(b)
}

// untrack checks that b is a live buffer from Alloc, calls release on it and,
// when release succeeds, forgets b. It holds live.mu throughout so that
// concurrent Frees of one buffer cannot both release it.
func untrack(b []byte, release func([]byte) error) error {
	if len(b) == 0 {
		return fmt.Errorf("%w (empty slice)", ErrNotAllocated)
	}
	live.mu.Lock()
	defer live.mu.Unlock()
	n, ok := live.bufs[&b[0]]
	switch {
	case !ok:
		return fmt.Errorf("%w (never allocated, or freed already)", ErrNotAllocated)
	case n != len(b):
		return fmt.Errorf("%w (length %d, Alloc returned %d)", ErrNotAllocated, len(b), n)
	}
	if err := release(b[:n:n]); err != nil {
		return err
	}
	delete(live.bufs, &b[0])
	return nil
}
