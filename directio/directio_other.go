//go:build !linux

package directio

import (
	"errors"
	"fmt"
	"os"
)

// Alloc returns size bytes, rounded up to a multiple of BlockSize, aligned to
// BlockSize. Off Linux the memory comes from the Go heap, over-allocated and
// re-sliced to the alignment, and is kept alive until Free. A size of zero or
// less is an error.
func Alloc(size int) ([]byte, error) {
	n, err := roundUp(size)
	if err != nil {
		return nil, err
	}
	raw := make([]byte, n+BlockSize)
	skip := int((BlockSize - addressOf(raw)%BlockSize) % BlockSize)
	b := raw[skip : skip+n : skip+n]
	track(b)
	return b, nil
}

// Free releases b, which must be the full slice that Alloc returned. Any
// other slice, including one already freed, is an error wrapping
// ErrNotAllocated. Off Linux it only lets the collector have the memory.
func Free(b []byte) error {
	return untrack(b, func([]byte) error { return nil })
}

// OpenFile is supported only on Linux. Elsewhere it returns a
// *NotSupportedError that also wraps errors.ErrUnsupported.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	return nil, &NotSupportedError{Op: "open", Path: path, Err: errors.ErrUnsupported}
}

// Discover is supported only on Linux. Elsewhere it returns a
// *NotSupportedError that also wraps errors.ErrUnsupported.
func Discover(path string) (Alignment, error) {
	return Alignment{}, &NotSupportedError{Op: "discover", Path: path, Err: errors.ErrUnsupported}
}

// Check is supported only on Linux. Elsewhere it returns a
// *NotSupportedError that also wraps errors.ErrUnsupported.
func Check(dir string) (Alignment, error) {
	return Alignment{}, &NotSupportedError{Op: "check", Path: dir, Err: errors.ErrUnsupported}
}

// FSType is supported only on Linux. Elsewhere it returns an error wrapping
// errors.ErrUnsupported.
func FSType(path string) (string, error) {
	return "", fmt.Errorf("directio: fstype %s: %w", path, errors.ErrUnsupported)
}
