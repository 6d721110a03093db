package directio

// This file holds the package's only use of unsafe.

import "unsafe"

// addressOf returns the address of b's first byte; for an empty slice, the
// address it would start at (nil for a nil slice). The result is only ever
// compared or reduced modulo an alignment, never turned back into a pointer.
func addressOf(b []byte) uintptr {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}
