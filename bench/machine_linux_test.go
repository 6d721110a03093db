package bench

import (
	"testing"
	"time"
)

// TestMachineCPUFromStat: the machine's CPU is user, nice, system, irq and
// softirq of /proc/stat's aggregate line, in USER_HZ ticks; idle, iowait
// and steal are not in it, and a malformed line gives 0.
func TestMachineCPUFromStat(t *testing.T) {
	stat := "cpu  1000 20 300 9000 400 5 75 600 0 0\ncpu0 500 10 150 4500 200 2 40 300 0 0\nintr 1 2 3\n"
	if got, want := machineCPUFromStat([]byte(stat)), float64(1000+20+300+5+75)/100; got != want {
		t.Errorf("machine CPU %v s, want %v", got, want)
	}
	for _, bad := range []string{"", "cpu 1 2 3\n", "intr 1 2 3 4 5 6 7 8\n", "cpu 1 2 x 4 5 6 7 8\n"} {
		if got := machineCPUFromStat([]byte(bad)); got != 0 {
			t.Errorf("%q: %v, want 0", bad, got)
		}
	}
	if MachineCPUTime() <= 0 {
		t.Error("this machine's CPU time is not positive")
	}
}

// TestParseDeviceStat: a block device's stat file gives its completed
// reads (field 1) and their summed time in flight (field 4, ms), and where
// it has 10 fields or more its writes (field 5), sectors written (field
// 7) and time busy (field 10, ms); a file of 4 to 9 fields gives the reads
// alone.
func TestParseDeviceStat(t *testing.T) {
	line := " 609483180 16223196 11629433530 448000056 82749257 6109662 2981647224 6658157 0 18157428 456670401 7168854 1051 2828768824 858192 27849513 1153994\n"
	d, ok := parseDeviceStat([]byte(line))
	want := DeviceCounts{IOs: 609483180, InFlight: 448000056 * time.Millisecond, Writes: 82749257, WrittenBytes: 2981647224 * 512, Busy: 18157428 * time.Millisecond, Full: true}
	if !ok || d != want {
		t.Errorf("%+v %v, want %+v", d, ok, want)
	}
	d, ok = parseDeviceStat([]byte("5 0 0 7 1 0 2"))
	if want := (DeviceCounts{IOs: 5, InFlight: 7 * time.Millisecond}); !ok || d != want {
		t.Errorf("7 fields: %+v %v, want %+v", d, ok, want)
	}
	for _, bad := range []string{"", "1 2 3", "1 2 3 x"} {
		if _, ok := parseDeviceStat([]byte(bad)); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	if _, ok := ReadDeviceCounts(t.TempDir()); !ok {
		t.Log("the temporary directory's block device has no stat file here (a tmpfs or overlay)")
	}
}
