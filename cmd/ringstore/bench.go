package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ringstore/ringstore/bench/readbench"
	"github.com/ringstore/ringstore/bench/walbench"
)

const benchUsage = `usage: ringstore bench [read|wal] [flags]

Without a workload name every benchmark runs with its defaults, read and then
wal, taking the flags of both; --json OUT then writes OUT-read.json and
OUT-wal.json (OUT without its .json).
Workloads:
  read    4 KiB O_DIRECT random reads: serial pread, goroutine-parallel pread,
          io_uring batches 1/8/64/256, SQPOLL, and fio (when installed)
  wal     1 KiB durable appends: os.File + fdatasync, the device's own
          fdatasync, ringstore's wal with 1/16/64/256 writers (io_uring) and
          64 (SQPOLL, syscall), and the peers hashicorp/raft-wal, tidwall/wal
          and etcd's wal (built from bench/peers when go is on PATH)
`

func cmdBench(args []string, stdout, stderr io.Writer) error {
	workload := "all"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		workload, args = args[0], args[1:]
	}
	switch workload {
	case "all", "read", "wal":
		return benchRun(workload, args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, benchUsage)
		return nil
	}
	fmt.Fprint(stderr, benchUsage)
	return usagef("bench: unknown workload %q", workload)
}

// benchRun parses the flags of workload ("all" takes those of every
// workload) and runs it.
func benchRun(workload string, args []string, stdout, stderr io.Writer) error {
	name := "bench"
	if workload != "all" {
		name += " " + workload
	}
	read, wal := workload != "wal", workload != "read"
	fs := newFlags(name, stderr)
	dir := fs.String("dir", os.TempDir(), "directory for the benchmark's files (read: must support O_DIRECT; wal: put it on a disk, not tmpfs)")
	dur := fs.Duration("duration", 2*time.Second, "measured time per mode and trial")
	trials := fs.Int("trials", 3, "trials per mode (at least 3 for ratios you can trust)")
	jsonOut := fs.String("json", "", "also write the results as JSON to this file")
	var file, size *string
	var noFio, noPeers *bool
	if read {
		file = fs.String("file", "", "read: existing file to read (default: create one of --size in --dir, removed afterwards)")
		size = fs.String("size", "1GiB", "read: size of the created file (K, M, G, KiB, MiB, GiB suffixes)")
		noFio = fs.Bool("no-fio", false, "read: skip the fio comparison even when fio is installed")
	}
	if wal {
		noPeers = fs.Bool("no-peers", false, "wal: skip the peers (hashicorp/raft-wal, tidwall/wal, etcd's wal)")
	}
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if *dur <= 0 {
		return usagef("%s: --duration must be positive, got %s", name, *dur)
	}
	if *trials < 1 {
		return usagef("%s: --trials must be at least 1, got %d", name, *trials)
	}
	var n int64
	if read {
		var err error
		if n, err = parseSize(*size); err != nil {
			return usagef("%s: --size: %v", name, err)
		}
	}
	if wal {
		if st, err := os.Stat(*dir); err != nil {
			return usagef("%s: --dir: %v", name, err)
		} else if !st.IsDir() {
			return usagef("%s: --dir: %s is not a directory", name, *dir)
		}
	}
	readJSON, walJSON := *jsonOut, *jsonOut
	if workload == "all" && *jsonOut != "" {
		base := strings.TrimSuffix(*jsonOut, ".json")
		readJSON, walJSON = base+"-read.json", base+"-wal.json"
	}
	var errs []error
	if read {
		errs = append(errs, readbench.Run(readbench.Options{File: *file, Dir: *dir, Size: n, Duration: *dur, Trials: *trials,
			Fio: !*noFio, JSON: readJSON, Out: stdout, Progress: stderr}))
	}
	if wal {
		errs = append(errs, walbench.Run(walbench.Options{Dir: *dir, Duration: *dur, Trials: *trials,
			Peers: !*noPeers, JSON: walJSON, Out: stdout, Progress: stderr}))
	}
	return errors.Join(errs...)
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
