//go:build !linux

package bench

import (
	"errors"
	"fmt"
	"os"
)

// ResidentBytes counts the bytes of f that are in the page cache; only on
// Linux.
func ResidentBytes(f *os.File) (int64, error) {
	return 0, fmt.Errorf("mincore on %s: %w", f.Name(), errors.ErrUnsupported)
}
