package scanbench

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/bench"
)

// cacheDropMethod says how dropPageCache makes a file cold.
const cacheDropMethod = "posix_fadvise(POSIX_FADV_DONTNEED) on every data file (only this benchmark's files, not the whole machine's cache), checked with mincore"

// dropPageCache asks the kernel to drop path's clean pages from the page
// cache and returns how many bytes of the file are still resident after it
// (mincore over a mapping of the file): pages mapped by a live process or
// still dirty stay.
func dropPageCache(path string) (resident int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return 0, &os.PathError{Op: "fadvise DONTNEED", Path: path, Err: err}
	}
	return bench.ResidentBytes(f)
}

func readProcIO() (procIO, error) {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return procIO{}, err
	}
	return parseProcIO(string(data))
}

func readUsage() (usage, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return usage{}, fmt.Errorf("getrusage: %w", err)
	}
	return usage{
		MajorFaults: ru.Majflt, MinorFaults: ru.Minflt,
		MaxRSSBytes: ru.Maxrss << 10, // KiB on Linux
		CPUSeconds:  float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6,
	}, nil
}

// readAheadKB returns the read_ahead_kb of the block device holding dir
// (of its disk when it is a partition), or "" when it cannot be found.
func readAheadKB(dir string) string {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return ""
	}
	base := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	for _, p := range []string{base + "/queue/read_ahead_kb", base + "/../queue/read_ahead_kb"} {
		if data, err := os.ReadFile(p); err == nil {
			return strings.TrimSpace(string(data))
		}
	}
	return ""
}
