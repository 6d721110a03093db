//go:build !linux

package bench

import "runtime"

func kernelRelease() string { return runtime.GOOS }

func totalMemory() uint64 { return 0 }

// CPUTime is not measured on this system.
func CPUTime() float64 { return 0 }

// MachineCPUTime is not measured on this system.
func MachineCPUTime() float64 { return 0 }

// ReadDeviceCounts is not available on this system.
func ReadDeviceCounts(dir string) (DeviceCounts, bool) { return DeviceCounts{}, false }
