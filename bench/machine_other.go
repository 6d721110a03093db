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

// DeviceReads is what the block layer counted of one device's reads; not
// measured on this system.
type DeviceReads struct {
	IOs      uint64
	InFlight time.Duration
}

// ReadDeviceReads is not available on this system.
func ReadDeviceReads(dir string) (DeviceReads, bool) { return DeviceReads{}, false }
