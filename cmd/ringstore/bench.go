package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ringstore/ringstore/bench/readbench"
)

const benchUsage = `usage: ringstore bench [read] [flags]

Without a workload name every benchmark runs with its defaults.
Workloads:
  read    4 KiB O_DIRECT random reads: serial pread, goroutine-parallel pread,
          io_uring batches 1/8/64/256, SQPOLL, and fio (when installed)
`

func cmdBench(args []string, stdout, stderr io.Writer) error {
	workload := "all"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		workload, args = args[0], args[1:]
	}
	switch workload {
	case "all", "read":
		return benchRead(args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, benchUsage)
		return nil
	}
	fmt.Fprint(stderr, benchUsage)
	return usagef("bench: unknown workload %q", workload)
}

func benchRead(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench read", stderr)
	file := fs.String("file", "", "existing file to read (default: create one of --size in --dir, removed afterwards)")
	dir := fs.String("dir", os.TempDir(), "directory for the created file (must support O_DIRECT)")
	size := fs.String("size", "1GiB", "size of the created file (K, M, G, KiB, MiB, GiB suffixes)")
	dur := fs.Duration("duration", 2*time.Second, "measured time per mode and trial")
	trials := fs.Int("trials", 3, "trials per mode (at least 3 for ratios you can trust)")
	jsonOut := fs.String("json", "", "also write the results as JSON to this file")
	noFio := fs.Bool("no-fio", false, "skip the fio comparison even when fio is installed")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	n, err := parseSize(*size)
	if err != nil {
		return usagef("bench read: --size: %v", err)
	}
	if *dur <= 0 {
		return usagef("bench read: --duration must be positive, got %s", *dur)
	}
	if *trials < 1 {
		return usagef("bench read: --trials must be at least 1, got %d", *trials)
	}
	return readbench.Run(readbench.Options{File: *file, Dir: *dir, Size: n, Duration: *dur, Trials: *trials,
		Fio: !*noFio, JSON: *jsonOut, Out: stdout, Progress: stderr})
}

// parseSize parses "1GiB", "512M", "4096", "1g".
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	n := v * float64(mult)
	if err != nil || !(n >= 1 && n <= 1<<50) { // written so that NaN fails too
		return 0, fmt.Errorf("%q is not a size (try 1GiB, 512M or 4096)", s)
	}
	return int64(n), nil
}
