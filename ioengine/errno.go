package ioengine

import (
	"errors"

	"golang.org/x/sys/unix"
)

// isRetryable reports errors after which a request is simply issued again:
// the kernel made no progress and says so.
func isRetryable(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR)
}

func isCanceled(err error) bool { return errors.Is(err, unix.ECANCELED) }
