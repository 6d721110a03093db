//go:build !linux

package bench

import (
	"runtime"
	"time"
)

func kernelRelease() string { return runtime.GOOS }

func totalMemory() uint64 { return 0 }

// CPUTime is not measured on this system.
func CPUTime() float64 { return 0 }

// MachineCPUTime is not measured on this system.
func MachineCPUTime() float64 { return 0 }

// DeviceCounts is what the block layer counted of one device; not
// measured on this system.
type DeviceCounts struct {
	IOs          uint64
	InFlight     time.Duration
	Writes       uint64
	WrittenBytes uint64
	Busy         time.Duration
	Full         bool
}

// ReadDeviceCounts is not available on this system.
func ReadDeviceCounts(dir string) (DeviceCounts, bool) { return DeviceCounts{}, false }
