//go:build !linux

package bufpool

import (
	"errors"
	"unsafe"
)

// WindowsSupported tells whether Options.Windows works here.
const WindowsSupported = false

var errNoWindows = errors.New("windows need Linux (memfd_create, MAP_FIXED)")

func newSharedArena(size int) (int, []byte, error)   { return -1, nil, errNoWindows }
func freeSharedArena(int, []byte) error              { return errNoWindows }
func reserveRange(int64) (unsafe.Pointer, error)     { return nil, errNoWindows }
func unmapRange(unsafe.Pointer, int64) error         { return errNoWindows }
func mapFrame(unsafe.Pointer, int, int, int64) error { return errNoWindows }
func mapGap(unsafe.Pointer, int) error               { return errNoWindows }

// prefault writes to each page of b.
func prefault(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
}
