//go:build !linux || ringstore_nouring

package ioengine

import "github.com/ringstore/ringstore/uring"

// ProbeKernel reports that io_uring is not compiled in.
func ProbeKernel() KernelProbe {
	return KernelProbe{NotCompiled: uring.NotCompiledReason}
}
