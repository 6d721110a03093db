//go:build !linux

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
)

// DenyIOURing is supported only on Linux. Elsewhere it returns an error
// wrapping errors.ErrUnsupported.
func DenyIOURing() error {
	return fmt.Errorf("seccomp: no seccomp on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
