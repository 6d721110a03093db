//go:build !linux

package scanbench

import (
	"errors"
	"fmt"
)

const cacheDropMethod = "none: this system has no posix_fadvise DONTNEED that the benchmark uses"

func dropPageCache(path string) (int64, error) {
	return 0, fmt.Errorf("drop page cache of %s: %w", path, errors.ErrUnsupported)
}

func readProcIO() (procIO, error) {
	return procIO{}, fmt.Errorf("/proc/self/io: %w", errors.ErrUnsupported)
}

func readUsage() (usage, error) { return usage{}, fmt.Errorf("getrusage: %w", errors.ErrUnsupported) }

func readAheadKB(dir string) string { return "" }
