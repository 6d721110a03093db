//go:build !linux

package bufpool

import (
	"errors"
	"unsafe"
)

// WindowsSupported tells whether Options.Windows works here.
const WindowsSupported = false

var errNoWindows = errors.New("windows need Linux (memfd_create, MAP_FIXED)")

func reserveRange(int64) (unsafe.Pointer, error)          { return nil, errNoWindows }
func unmapRange(unsafe.Pointer, int64) error              { return errNoWindows }
func mapFrame(unsafe.Pointer, int, int, int64) error      { return errNoWindows }
func mapGap(unsafe.Pointer, int) error                    { return errNoWindows }
func moveFrame(unsafe.Pointer, unsafe.Pointer, int) error { return errNoWindows }
