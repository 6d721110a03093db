//go:build linux && !ringstore_nouring

package uring

// Compiled reports whether io_uring support is compiled into this binary.
const Compiled = true

// NotCompiledReason is empty when Compiled is true.
const NotCompiledReason = ""
