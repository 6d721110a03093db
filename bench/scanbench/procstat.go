package scanbench

import (
	"fmt"
	"strconv"
	"strings"
)

// procIO is this process's storage I/O so far, from /proc/self/io.
type procIO struct {
	ReadBytes  int64 // bytes this process caused to be fetched from storage: page-cache misses, readahead, O_DIRECT and io_uring reads alike
	RChar      int64 // bytes returned by read-like system calls, from the cache or not
	WriteBytes int64
}

func parseProcIO(data string) (procIO, error) {
	var p procIO
	seen := 0
	for _, line := range strings.Split(data, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return procIO{}, fmt.Errorf("/proc/self/io: %s: not a number: %q", k, strings.TrimSpace(v))
		}
		switch k {
		case "read_bytes":
			p.ReadBytes, seen = n, seen|1
		case "rchar":
			p.RChar, seen = n, seen|2
		case "write_bytes":
			p.WriteBytes, seen = n, seen|4
		}
	}
	if seen != 7 {
		return procIO{}, fmt.Errorf("/proc/self/io: missing read_bytes, rchar or write_bytes in %q", data)
	}
	return p, nil
}

// usage is what getrusage says of this process so far.
type usage struct {
	MajorFaults, MinorFaults int64
	MaxRSSBytes              int64
	CPUSeconds               float64
}
