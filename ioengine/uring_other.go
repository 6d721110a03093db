//go:build !linux || ringstore_nouring

package ioengine

import (
	"errors"
	"fmt"

	"github.com/ringstore/ringstore/uring"
)

func newURing(Options, bool) (backend, Backend, error) {
	return nil, BackendSyscall, fmt.Errorf("%s: %w", uring.NotCompiledReason, errors.ErrUnsupported)
}
