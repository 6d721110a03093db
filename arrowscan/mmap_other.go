//go:build !linux

package arrowscan

import (
	"errors"
	"os"
)

// mapFile is supported only on Linux; elsewhere ModeMmap fails at Open
// with an error wrapping errors.ErrUnsupported.
func mapFile(f *os.File, size int64) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapFile(b []byte) error { return errors.ErrUnsupported }
