// Command ringstore probes the machine for io_uring and O_DIRECT, and runs
// ringstore's side-by-side benchmarks.
//
//	ringstore probe [--dir D] [--json]
//	ringstore bench [read|wal] [flags]
//	ringstore wal verify|stat|dump|repair DIR [flags]
//	ringstore gen events --rows N --dir D [flags]
//	ringstore scan --mode M --query Q [flags] FILES...
//	ringstore kv stat|get|put|delete|scan DIR [args] [flags]
//
// Run `ringstore help` for the flags.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ringstore/ringstore/bench"
)

// usageError is a mistake in the command line; it exits with status 2.
type usageError struct{ msg string }

// helpText is what --help asked for: printed on stdout, exit status 0.
type helpText struct{ text string }

func (h *helpText) Error() string { return "help requested" }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

const usage = `ringstore — fast, safe storage I/O on io_uring

usage:
  ringstore probe [--dir D] [--json]     kernel, io_uring, backend and O_DIRECT support
  ringstore bench [flags]                every benchmark, side by side: read, wal, scan, then kv
  ringstore bench read [flags]           4 KiB O_DIRECT random reads: pread vs io_uring vs fio
  ringstore bench wal [flags]            1 KiB durable appends: fdatasync per write vs ringstore's
                                         wal (1–256 writers) and kv vs raft-wal, tidwall/wal, etcd's wal
  ringstore bench scan [flags]           12 concurrent Arrow queries under a memory limit: mmap,
                                         pread, O_DIRECT and the buffer pool, against the device
  ringstore bench kv [flags]             cold batched point reads: MultiGet on io_uring vs syscalls,
                                         Pebble, the device's QD64 IOPS and the CPU's limit
  ringstore wal verify DIR [--json]      check every byte of the write-ahead log in DIR (read-only)
  ringstore wal stat DIR [--json]        its segments, entries, bytes on disk, first and last seq
  ringstore wal dump DIR [flags]         print its entries (--from, --to, --limit, --format hex|text|json)
  ringstore wal repair DIR --yes         cut it at its first damage so that it opens again
  ringstore gen events --rows N --dir D  time-series events as Arrow IPC files (--files, --compression, --seed)
  ringstore scan --mode M --query Q F... run an events query over Arrow files: mmap|pread|direct|pool
                                         (--query list shows them)
  ringstore kv stat|get|put|delete|scan DIR ...
                                         the kv store in DIR: options and stats, get KEY, put KEY VALUE,
                                         delete KEY, scan [--from K] [--to K] [--limit N]
  ringstore report FILE.json... --html OUT
                                         the JSON reports of bench as one HTML page of charts
  ringstore version [--json]             the module version and commit this binary was built from
  ringstore help                         this text

Run 'ringstore <command> --help' for a command's flags.
Environment: RINGSTORE_IO_URING=false turns io_uring off (only unset or exactly "true" enables it).
`

func main() {
	bench.MaybeChild()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs one command line and returns its exit status: 0, 1 for a
// failure while running, 2 for a mistake in the command line. Help goes to
// stdout; every error is one line on stderr with one "ringstore:" prefix
// (and, for a usage error, a pointer to the help).
func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	if err == nil {
		return 0
	}
	var help *helpText
	if errors.As(err, &help) {
		fmt.Fprint(stdout, help.text)
		return 0
	}
	fmt.Fprintf(stderr, "ringstore: %s\n", strings.TrimPrefix(err.Error(), "ringstore: "))
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprint(stderr, "run 'ringstore help' for usage\n")
		return 2
	}
	return 1
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usagef("no command given")
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case "probe":
		return cmdProbe(args[1:], stdout, stderr)
	case "bench":
		return cmdBench(args[1:], stdout, stderr)
	case "wal":
		return cmdWAL(args[1:], stdout, stderr)
	case "gen":
		return cmdGen(args[1:], stdout, stderr)
	case "scan":
		return cmdScan(args[1:], stdout, stderr)
	case "kv":
		return cmdKV(args[1:], stdout, stderr)
	case "version", "--version":
		return cmdVersion(args[1:], stdout, stderr)
	case "report":
		return cmdReport(args[1:], stdout, stderr)
	}
	return usagef("unknown command %q", args[0])
}

// newFlags returns a flag set named for the command ("gen events") that
// reports errors instead of exiting. Its usage text (a synopsis and the
// flags) goes to fs.Output(); parse captures it for --help.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: ringstore %s [flags]\n", name)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags: --help returns the command's usage (printed on
// stdout by run), a bad flag a one-line usage error; stray positional
// arguments are an error unless allowArgs.
func parse(fs *flag.FlagSet, args []string, allowArgs bool) error {
	out := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &helpText{buf.String()}
		}
		return usagef("%s: %v", fs.Name(), err)
	}
	if !allowArgs && fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}
