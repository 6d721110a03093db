package scanbench

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
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
	return residentBytes(f)
}

// residentBytes counts the bytes of f that are in the page cache.
func residentBytes(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if size == 0 {
		return 0, nil
	}
	page := int64(os.Getpagesize())
	const window = 256 << 20 // map a window at a time: no need for address space the size of the file
	var resident int64
	vec := make([]byte, window/page)
	for off := int64(0); off < size; off += window {
		n := min(window, size-off)
		m, err := unix.Mmap(int(f.Fd()), off, int(n), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return 0, &os.PathError{Op: "mmap", Path: f.Name(), Err: err}
		}
		pages := (n + page - 1) / page
		err = mincore(m, vec[:pages])
		unix.Munmap(m)
		if err != nil {
			return 0, &os.PathError{Op: "mincore", Path: f.Name(), Err: err}
		}
		for i, v := range vec[:pages] {
			if v&1 != 0 {
				resident += min(page, n-int64(i)*page)
			}
		}
	}
	return resident, nil
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
