package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ringstore/ringstore/arrowscan"
	"github.com/ringstore/ringstore/arrowscan/events"
)

const genUsage = `usage: ringstore gen <data set> [flags]

Data sets:
  events --rows N --dir D [--files K] [--batch-rows R] [--compression none|lz4|zstd] [--seed S] [--json] [--replace]
          time-series events as Arrow IPC files (D/events-000000.arrow, ...),
          the data 'ringstore scan' runs its queries over; the same seed and
          row count give the same rows however they are cut into files.
          It overwrites only the files it writes, and refuses a D holding
          other events files of an earlier run (--replace removes them first)
`

func cmdGen(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("gen: no data set given (events)")
	}
	switch args[0] {
	case "events":
		return genEvents(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, genUsage)
		return nil
	}
	return usagef("gen: unknown data set %q (events)", args[0])
}

func genEvents(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("gen events", stderr)
	rows := fs.Int64("rows", 0, "number of events (required, ≥ 1)")
	dir := fs.String("dir", "", "directory to write the files into (required; created if missing)")
	files := fs.Int("files", 1, "number of files, consecutive in time")
	batchRows := fs.Int("batch-rows", events.DefaultRowsPerBatch, "rows per record batch")
	compression := fs.String("compression", "none", "compression of record batch bodies: none, lz4 or zstd")
	seed := fs.Int64("seed", 1, "seed of the generator")
	noSidecar := fs.Bool("no-sidecar", false, "do not write FILE.crc, the checksums 'ringstore scan --verify' checks every byte of the file against (Arrow IPC has none of its own)")
	asJSON := fs.Bool("json", false, "print what was written as JSON instead of text")
	replace := fs.Bool("replace", false, "remove the events files (events-*.arrow and their .crc) of an earlier run that this run would not overwrite, instead of refusing to mix two data sets")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	switch {
	case *rows < 1:
		return usagef("gen events: --rows must be at least 1, got %d", *rows)
	case *dir == "":
		return usagef("gen events: --dir is required")
	case *files < 1:
		return usagef("gen events: --files must be at least 1, got %d", *files)
	case int64(*files) > *rows:
		return usagef("gen events: --files (%d) must not exceed --rows (%d)", *files, *rows)
	case *batchRows < 1:
		return usagef("gen events: --batch-rows must be at least 1, got %d", *batchRows)
	}
	c := strings.ToLower(*compression)
	if c != "none" && c != "lz4" && c != "zstd" {
		return usagef("gen events: --compression must be none, lz4 or zstd, got %q", *compression)
	}
	if st, err := os.Stat(*dir); err == nil && !st.IsDir() {
		return usagef("gen events: --dir: %s is not a directory", *dir)
	}
	opts := events.GenOptions{Rows: *rows, Files: *files, RowsPerBatch: *batchRows, Compression: c, Seed: *seed, Sidecar: !*noSidecar}
	// Files of an earlier run that this one would not overwrite would mix
	// two data sets in D ('ringstore scan D' reads every *.arrow).
	stale, err := staleEventFiles(*dir, *files, opts.Sidecar)
	if err != nil {
		return fmt.Errorf("gen events: %w", err)
	}
	if len(stale) > 0 && !*replace {
		return fmt.Errorf("gen events: %s holds %d events files of an earlier run that this run would not overwrite (%s); they would mix two data sets: remove them, choose another --dir, or give --replace to remove them first",
			filepath.Clean(*dir), len(stale), strings.Join(baseNames(stale, 4), ", "))
	}
	for _, p := range stale {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("gen events: --replace: %w", err)
		}
		fmt.Fprintf(stderr, "ringstore: gen events: removed %s (an earlier run's)\n", p)
	}
	start := time.Now()
	paths, err := events.Generate(*dir, opts)
	if err != nil {
		return fmt.Errorf("gen events: %w", err)
	}
	elapsed := time.Since(start)
	var total int64
	type fileJSON struct {
		Path    string `json:"path"`
		Bytes   int64  `json:"bytes"`
		Sidecar string `json:"sidecar,omitempty"`
	}
	var written []fileJSON
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("gen events: %w", err)
		}
		total += st.Size()
		fj := fileJSON{Path: p, Bytes: st.Size()}
		if opts.Sidecar {
			fj.Sidecar = p + arrowscan.SidecarSuffix
		}
		written = append(written, fj)
		if !*asJSON {
			fmt.Fprintf(stdout, "%s\t%d bytes\n", p, st.Size())
		}
	}
	secs := elapsed.Seconds()
	if *asJSON {
		return printJSON(stdout, map[string]any{
			"dir": filepath.Clean(*dir), "files": written, "rows": *rows, "bytes": total,
			"compression": c, "seed": *seed, "rows_per_batch": *batchRows, "seconds": secs,
		})
	}
	fmt.Fprintf(stdout, "wrote %d files in %s: %d rows, %d bytes (%.1f B/row, compression %s) in %.2fs: %.1f MB/s, %.2f M rows/s\n",
		len(paths), filepath.Clean(*dir), *rows, total, float64(total)/float64(*rows), c, secs, float64(total)/secs/1e6, float64(*rows)/secs/1e6)
	return nil
}

// staleEventFiles returns the events files in dir (events-*.arrow and
// their checksum sidecars) that a run writing files files, with sidecars
// or not, would not overwrite: an earlier run's.
func staleEventFiles(dir string, files int, sidecar bool) ([]string, error) {
	ours := map[string]bool{}
	for i := range files {
		ours[events.FileName(i)] = true
		if sidecar {
			ours[events.FileName(i)+arrowscan.SidecarSuffix] = true
		}
	}
	var stale []string
	for _, pattern := range []string{"events-*.arrow", "events-*.arrow" + arrowscan.SidecarSuffix} {
		matches, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return nil, err
		}
		for _, m := range matches {
			if !ours[filepath.Base(m)] {
				stale = append(stale, m)
			}
		}
	}
	sort.Strings(stale)
	return stale, nil
}

// baseNames returns the base names of the first n paths, and "..." when
// there are more.
func baseNames(paths []string, n int) []string {
	var out []string
	for i, p := range paths {
		if i == n {
			return append(out, "...")
		}
		out = append(out, filepath.Base(p))
	}
	return out
}
