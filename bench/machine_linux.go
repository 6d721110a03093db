package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/ringstore/ringstore/internal/proccpu"
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

// CPUTime returns the process's user+system CPU seconds so far (0 where
// the kernel would not say).
func CPUTime() float64 {
	s, _ := proccpu.Seconds()
	return s
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

// ReadDeviceCounts returns the counts of the block device holding dir (a
// partition's own, where dir is on one); false if they cannot be read.
func ReadDeviceCounts(dir string) (DeviceCounts, bool) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return DeviceCounts{}, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/stat", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return DeviceCounts{}, false
	}
	return parseDeviceStat(b)
}

// parseDeviceStat reads a block device's stat file (the kernel's
// Documentation/block/stat.rst): read I/Os (field 1) and read ticks in
// milliseconds (field 4); where there are 10 fields or more, write I/Os
// (field 5), sectors written (field 7, 512 bytes each) and io_ticks, the
// milliseconds it had requests in flight (field 10).
func parseDeviceStat(b []byte) (DeviceCounts, bool) {
	f := bytes.Fields(b)
	if len(f) < 4 {
		return DeviceCounts{}, false
	}
	field := func(i int) (uint64, bool) {
		v, err := strconv.ParseUint(string(f[i-1]), 10, 64)
		return v, err == nil
	}
	ios, ok1 := field(1)
	ms, ok2 := field(4)
	if !ok1 || !ok2 {
		return DeviceCounts{}, false
	}
	d := DeviceCounts{IOs: ios, InFlight: time.Duration(ms) * time.Millisecond}
	if len(f) >= 10 {
		writes, ok1 := field(5)
		sectors, ok2 := field(7)
		busy, ok3 := field(10)
		if ok1 && ok2 && ok3 {
			d.Writes, d.WrittenBytes, d.Busy, d.Full = writes, sectors*512, time.Duration(busy)*time.Millisecond, true
		}
	}
	return d, true
}
