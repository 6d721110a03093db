package bufpool

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// checkDescriptor checks what Register promises about fd: open, readable,
// with O_DIRECT, and (for a regular file) at least size bytes long.
func checkDescriptor(fd int, size int64, name string) error {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return fmt.Errorf("%w: register %s: descriptor %d: %w", ErrBadFile, name, fd, &os.PathError{Op: "fcntl", Path: name, Err: err})
	}
	if flags&unix.O_ACCMODE == unix.O_WRONLY {
		return fmt.Errorf("%w: register %s: descriptor %d is open for writing only", ErrBadFile, name, fd)
	}
	if flags&unix.O_DIRECT == 0 {
		return fmt.Errorf("%w: register %s: descriptor %d is not open with O_DIRECT (use directio.OpenFile)", ErrBadFile, name, fd)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("%w: register %s: descriptor %d: %w", ErrBadFile, name, fd, &os.PathError{Op: "fstat", Path: name, Err: err})
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG && size > st.Size {
		return fmt.Errorf("%w: register %s: size %d exceeds the file's %d bytes", ErrBadFile, name, size, st.Size)
	}
	return nil
}
