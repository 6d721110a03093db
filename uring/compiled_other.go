//go:build !linux || ringstore_nouring

package uring

import "runtime"

// Compiled reports whether io_uring support is compiled into this binary.
const Compiled = false

// NotCompiledReason says why io_uring is not compiled in.
var NotCompiledReason = func() string {
	if runtime.GOOS != "linux" {
		return "io_uring is Linux only; this is " + runtime.GOOS
	}
	return "built with the ringstore_nouring tag"
}()
