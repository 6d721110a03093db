//go:build !linux

package proccpu

// Seconds returns false: the process's CPU time is read on Linux only.
func Seconds() (float64, bool) { return 0, false }
