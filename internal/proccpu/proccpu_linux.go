package proccpu

import "golang.org/x/sys/unix"

// Seconds returns the process's user and system CPU seconds so far (every
// thread), and false where the kernel would not say.
func Seconds() (float64, bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6, true
}
