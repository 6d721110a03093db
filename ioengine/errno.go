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

// atEOF reports whether off is at or past the end of the regular file fd
// refers to. It is asked only after a short read, which is rare.
func atEOF(fd int, off int64) bool {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	return off >= st.Size
}
