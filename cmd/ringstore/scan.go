package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ringstore/ringstore/arrowscan"
	"github.com/ringstore/ringstore/arrowscan/events"
	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/ioengine"
)

const scanUsage = `usage: ringstore scan --mode mmap|pread|direct|pool --query Q [flags] FILE|DIR...
       ringstore scan --verify [--json] FILE|DIR...
       ringstore scan --query list [--json]

Runs one of the events queries over Arrow IPC files written by
'ringstore gen events' (a DIR stands for its *.arrow files, in name order),
prints the result table and a line of figures: rows scanned, bytes read from
the device (/proc/self/io read_bytes before and after: real storage reads in
every mode; a warm page cache makes them 0 for mmap and pread), elapsed time,
and the pool's counters in pool mode.
Modes:
  mmap    arrow-go's reader over a read-only mmap of each file
  pread   the projected byte ranges with pread, through the page cache
  direct  O_DIRECT reads through ioengine (io_uring or syscalls, --io)
  pool    O_DIRECT through one bufpool.Pool of --pool, with prefetch
--verify checks every byte of each file against its checksum sidecar
(FILE.crc, written by 'ringstore gen events'): Arrow IPC files have no
checksums of their own, and --check compares the engine with a reference
computed from the same bytes. A query over files with sidecars checks every
range it reads against them (a changed byte fails the query, naming the file
and the offset); --no-sidecar-check skips that.
Flags:
`

func cmdScan(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("scan", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), scanUsage)
		fs.PrintDefaults()
	}
	modeName := fs.String("mode", "", "how files are read: mmap, pread, direct or pool (required)")
	queryName := fs.String("query", "", "query to run; 'list' prints them (required)")
	poolSize := fs.String("pool", "256MiB", "pool: memory budget of the buffer pool")
	frameSize := fs.String("frame", "256KiB", "pool: frame size, a multiple of 4KiB")
	ioName := fs.String("io", "auto", "direct and pool: I/O backend: auto (RINGSTORE_IO_URING), uring, sqpoll or syscall")
	prefetch := fs.Int("prefetch", 0, "direct and pool: record batches read ahead of the decoder (0: arrowscan's default, negative: none)")
	check := fs.Bool("check", false, "also compute the query the slow way (row at a time over arrow-go's FileReader) and fail unless equal: checks the engine against the reference, not the file's integrity (see --verify)")
	asJSON := fs.Bool("json", false, "print JSON: the query's result and figures, --verify's checks, or --query list's queries")
	verify := fs.Bool("verify", false, "check every byte of each file against its checksum sidecar FILE.crc, and run no query")
	noSidecarCheck := fs.Bool("no-sidecar-check", false, "do not check what the query reads against the files' checksum sidecars (CAUTION: a changed byte in a batch then reads as a different value, without an error)")
	paths, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *verify {
		if *queryName != "" || *modeName != "" || *check || *noSidecarCheck {
			return usagef("scan: --verify runs no query: give it no --query, --mode, --check or --no-sidecar-check")
		}
		if len(paths) == 0 {
			return usagef("scan: no files given")
		}
		files, err := expandArrowPaths(paths)
		if err != nil {
			return usagef("scan: %v", err)
		}
		return verifyFiles(files, *asJSON, stdout)
	}
	if *queryName == "list" {
		return printQueries(stdout, *asJSON)
	}
	if *queryName == "" {
		return usagef("scan: --query is required (--query list shows them)")
	}
	q, err := events.QueryByName(*queryName)
	if err != nil {
		return usagef("scan: --query: %v", err)
	}
	if *modeName == "" {
		return usagef("scan: --mode is required (mmap, pread, direct or pool)")
	}
	mode, err := arrowscan.ParseMode(*modeName)
	if err != nil {
		return usagef("scan: --mode: %v", err)
	}
	ioMode, err := ioengine.ParseIOMode(*ioName)
	if err != nil {
		return usagef("scan: --io: %v", err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if mode != arrowscan.ModePool && (set["pool"] || set["frame"]) {
		return usagef("scan: --pool and --frame are for --mode pool, not %s", mode)
	}
	if (mode == arrowscan.ModeMmap || mode == arrowscan.ModePread) && (set["io"] || set["prefetch"]) {
		return usagef("scan: --io and --prefetch are for --mode direct or pool, not %s", mode)
	}
	frameBytes, err := sizeArg("scan", "frame", *frameSize, 4<<10, 1<<30)
	if err != nil {
		return err
	}
	if frameBytes%(4<<10) != 0 {
		return usagef("scan: --frame must be a multiple of 4KiB, got %s", *frameSize)
	}
	poolBytes, err := sizeArg("scan", "pool", *poolSize, bufpool.MinFrames*frameBytes, 1<<44)
	if err != nil {
		return usagef("%s (a pool holds at least %d frames of --frame %s)", err.Error(), bufpool.MinFrames, *frameSize)
	}
	if len(paths) == 0 {
		return usagef("scan: no files given")
	}
	files, err := expandArrowPaths(paths)
	if err != nil {
		return usagef("scan: %v", err)
	}
	sc := scanConfig{mode: mode, ioMode: ioMode, prefetch: *prefetch, poolBytes: poolBytes,
		frameBytes: int(frameBytes), json: *asJSON, noSidecarCheck: *noSidecarCheck, logf: func(format string, args ...any) { fmt.Fprintf(stderr, "ringstore: "+format+"\n", args...) }}
	return runScan(sc, q, files, *check, stdout)
}

// scanConfig is what cmdScan parsed.
type scanConfig struct {
	mode       arrowscan.Mode
	ioMode     ioengine.IOMode
	prefetch   int
	poolBytes  int64
	frameBytes int
	json       bool
	// noSidecarCheck: arrowscan.Options.SkipSidecarCheck.
	noSidecarCheck bool
	logf           func(string, ...any)
}

func runScan(sc scanConfig, q events.Query, paths []string, check bool, stdout io.Writer) (err error) {
	before, ioErr := readBytesOfProcess()
	start := time.Now()
	var eng *ioengine.Engine
	var pool *bufpool.Pool
	var files []*arrowscan.File
	defer func() {
		var errs []error
		for _, f := range files {
			errs = append(errs, f.Close())
		}
		if pool != nil {
			errs = append(errs, pool.Close())
		}
		if eng != nil {
			errs = append(errs, eng.Close())
		}
		if cerr := errors.Join(errs...); cerr != nil && err == nil {
			err = fmt.Errorf("scan: closing: %w", cerr)
		}
	}()
	if sc.mode == arrowscan.ModeDirect || sc.mode == arrowscan.ModePool {
		if eng, err = ioengine.New(ioengine.Options{Mode: sc.ioMode, Logf: sc.logf}); err != nil {
			return fmt.Errorf("scan: %w", err)
		}
	}
	if sc.mode == arrowscan.ModePool {
		pool, err = bufpool.New(arrowscan.PoolOptions(bufpool.Options{FrameSize: sc.frameBytes, Budget: sc.poolBytes, Engine: eng, Logf: sc.logf}))
		if err != nil {
			return fmt.Errorf("scan: %w", err)
		}
	}
	opts := arrowscan.Options{Mode: sc.mode, Pool: pool, Engine: eng, IOMode: sc.ioMode, Prefetch: sc.prefetch, SkipSidecarCheck: sc.noSidecarCheck}
	for _, p := range paths {
		f, err := arrowscan.Open(p, opts)
		if err != nil {
			return fmt.Errorf("scan: %w", err)
		}
		files = append(files, f)
	}
	opened := time.Now()
	res, err := events.Run(files, q.Name)
	if err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	end := time.Now()
	after, ioErr2 := readBytesOfProcess()
	if check {
		ref, err := events.Reference(paths, q.Name)
		if err != nil {
			return fmt.Errorf("scan: --check: %w", err)
		}
		if err := res.Equal(ref); err != nil {
			return fmt.Errorf("scan: --check: %s mode vs the row-at-a-time reference: %w", sc.mode, err)
		}
	}
	if sc.json {
		out := map[string]any{"mode": sc.mode.String(), "query": q.Name, "files": paths, "columns": res.Columns, "rows": res.Rows,
			"rows_scanned": res.RowsScanned, "elapsed_ms": float64(end.Sub(start)) / 1e6, "checked": check}
		if eng != nil {
			out["backend"], out["fallback_reason"] = eng.Backend().String(), eng.FallbackReason()
		}
		if ioErr == nil && ioErr2 == nil {
			out["device_read_bytes"] = after - before
		}
		if pool != nil {
			out["pool"] = pool.Stats()
		}
		return printJSON(stdout, out)
	}

	fmt.Fprint(stdout, res)
	elapsed := end.Sub(start)
	backend := ""
	if eng != nil {
		backend = " on " + eng.Backend().String()
		if r := eng.FallbackReason(); r != "" {
			backend += " (" + r + ")"
		}
	}
	fmt.Fprintf(stdout, "mode %s%s, query %s, %d files, %d rows scanned, elapsed %s (open %s, query %s)\n",
		sc.mode, backend, q.Name, len(files), res.RowsScanned, round(elapsed), round(opened.Sub(start)), round(end.Sub(opened)))
	if ioErr == nil && ioErr2 == nil {
		n := after - before
		fmt.Fprintf(stdout, "device reads %d bytes (%.1f MiB, /proc/self/io read_bytes), %.1f MB/s over the elapsed time\n",
			n, float64(n)/(1<<20), float64(n)/elapsed.Seconds()/1e6)
	} else {
		fmt.Fprintf(stdout, "device reads unknown: %v\n", errors.Join(ioErr, ioErr2))
	}
	if pool != nil {
		st := pool.Stats()
		fmt.Fprintf(stdout, "pool %d frames of %d KiB: hits %d, misses %d, load waits %d, evictions %d, prefetch issued %d, prefetch hits %d, stalls %d, bytes read %d\n",
			st.Frames, st.FrameSize>>10, st.Hits, st.Misses, st.LoadWaits, st.Evictions, st.PrefetchIssued, st.PrefetchHits, st.Stalls, st.BytesRead)
	}
	if check {
		fmt.Fprintln(stdout, "check: equal to the row-at-a-time reference over arrow-go's FileReader")
	}
	return nil
}

// verifyFiles checks each file against its checksum sidecar and says what
// it checked; the first mismatch or missing sidecar is the error.
func verifyFiles(paths []string, asJSON bool, stdout io.Writer) error {
	type fileJSON struct {
		Path       string `json:"path"`
		OK         bool   `json:"ok"`
		Bytes      int64  `json:"bytes,omitempty"`
		Records    int    `json:"record_batches,omitempty"`
		Dictionary int    `json:"dictionary_batches,omitempty"`
		Error      string `json:"error,omitempty"`
	}
	var errs []error
	var out []fileJSON
	for _, p := range paths {
		rep, err := arrowscan.VerifySidecar(p)
		if err != nil {
			out = append(out, fileJSON{Path: p, Error: err.Error()})
			if !asJSON {
				fmt.Fprintf(stdout, "%s: FAILED: %v\n", p, err)
			}
			errs = append(errs, err)
			continue
		}
		out = append(out, fileJSON{Path: p, OK: true, Bytes: rep.Bytes, Records: rep.Records, Dictionary: rep.Dictionary})
		if !asJSON {
			fmt.Fprintf(stdout, "%s: ok: %d bytes, %d record batches and %d dictionary batches match their checksums\n", p, rep.Bytes, rep.Records, rep.Dictionary)
		}
	}
	if asJSON {
		if err := printJSON(stdout, map[string]any{"ok": len(errs) == 0, "files": out}); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("scan --verify: %d of %d files failed: %w", len(errs), len(paths), errs[0])
	}
	return nil
}

func round(d time.Duration) time.Duration {
	if d > time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}

// parseInterleaved parses flags given before, between and after the
// positional arguments and returns the positional ones in order.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args, true); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil // everything after "--" is positional
		}
		i := 0
		for i < len(rest) && !(strings.HasPrefix(rest[i], "-") && len(rest[i]) > 1) {
			i++
		}
		pos = append(pos, rest[:i]...)
		args = rest[i:]
	}
}

// expandArrowPaths replaces each directory by its *.arrow files in name
// order and checks that every path exists.
func expandArrowPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		matches, err := filepath.Glob(filepath.Join(p, "*.arrow"))
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("directory %s holds no *.arrow files", p)
		}
		sort.Strings(matches)
		out = append(out, matches...)
	}
	return out, nil
}

func printQueries(w io.Writer, asJSON bool) error {
	if asJSON {
		type queryJSON struct {
			Name        string   `json:"name"`
			Columns     []string `json:"columns"`
			Description string   `json:"description"`
		}
		var qs []queryJSON
		for _, q := range events.Queries() {
			qs = append(qs, queryJSON{q.Name, q.Columns, q.Description})
		}
		return printJSON(w, qs)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "query\tcolumns\tdescription")
	for _, q := range events.Queries() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", q.Name, strings.Join(q.Columns, ","), q.Description)
	}
	return tw.Flush()
}

// readBytesOfProcess returns read_bytes of /proc/self/io: the bytes this
// process caused to be fetched from storage (page-cache misses, mmap
// faults, O_DIRECT and io_uring reads alike).
func readBytesOfProcess() (int64, error) {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "read_bytes:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/self/io: read_bytes %q: %w", v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("/proc/self/io has no read_bytes line")
}
