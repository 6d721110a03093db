package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
}

func totalMemory() uint64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// CPUTime returns the process's user+system CPU seconds so far.
func CPUTime() float64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// userHZ is the unit of /proc/stat's times: USER_HZ, 100 on every Linux
// architecture Go supports.
const userHZ = 100

// MachineCPUTime returns the CPU seconds every CPU of the machine has
// spent so far outside idle, I/O wait and steal: every process's user and
// system time, and the kernel's interrupts and softirqs, which no process
// is charged for (a read's completion is handled there). 0 if /proc/stat
// cannot be read.
func MachineCPUTime() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	return machineCPUFromStat(b)
}

// machineCPUFromStat sums user, nice, system, irq and softirq of the
// aggregate "cpu" line of /proc/stat's contents, in seconds.
func machineCPUFromStat(stat []byte) float64 {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 8 || string(f[0]) != "cpu" {
		return 0
	}
	var ticks uint64
	// cpu user nice system idle iowait irq softirq [steal guest guest_nice]
	for _, i := range []int{1, 2, 3, 6, 7} {
		v, err := strconv.ParseUint(string(f[i]), 10, 64)
		if err != nil {
			return 0
		}
		ticks += v
	}
	return float64(ticks) / userHZ
}

// DeviceReads is what the block layer counted of one device's reads
// (/sys/dev/block/MAJ:MIN/stat): how many completed, and their time from
// issue to completion summed over them. Over a span, ΔInFlight ÷ the span
// is the mean number of reads the device had in flight (Little's law), as
// the device saw them: a read's time between its completion and its
// reaping by the program is not in it.
type DeviceReads struct {
	IOs      uint64
	InFlight time.Duration
}

// ReadDeviceReads returns the counts of the block device holding dir (a
// partition's own, where dir is on one); false if they cannot be read.
func ReadDeviceReads(dir string) (DeviceReads, bool) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return DeviceReads{}, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/stat", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return DeviceReads{}, false
	}
	return parseDeviceStat(b)
}

// parseDeviceStat reads a block device's stat file: read I/Os (field 1)
// and read ticks in milliseconds (field 4).
func parseDeviceStat(b []byte) (DeviceReads, bool) {
	f := bytes.Fields(b)
	if len(f) < 4 {
		return DeviceReads{}, false
	}
	ios, err1 := strconv.ParseUint(string(f[0]), 10, 64)
	ms, err2 := strconv.ParseUint(string(f[3]), 10, 64)
	if err1 != nil || err2 != nil {
		return DeviceReads{}, false
	}
	return DeviceReads{IOs: ios, InFlight: time.Duration(ms) * time.Millisecond}, true
}
