package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ringstore/ringstore/arrowscan"
	"github.com/ringstore/ringstore/arrowscan/events"
)

const genUsage = `usage: ringstore gen <data set> [flags]

Data sets:
  events --rows N --dir D [--files K] [--batch-rows R] [--compression none|lz4|zstd] [--seed S] [--json]
          time-series events as Arrow IPC files (D/events-000000.arrow, ...),
          the data 'ringstore scan' runs its queries over; the same seed and
          row count give the same rows however they are cut into files
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
	if stale := otherEventFiles(*dir, paths); len(stale) > 0 {
		fmt.Fprintf(stderr, "ringstore: gen events: note: %s also holds %d events files this run did not write (%s ...); 'ringstore scan %s' would read them too\n",
			*dir, len(stale), filepath.Base(stale[0]), *dir)
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

// otherEventFiles returns the events-*.arrow files in dir that are not in
// written: what an earlier run with more files left.
func otherEventFiles(dir string, written []string) []string {
	matches, _ := filepath.Glob(filepath.Join(dir, "events-*.arrow"))
	ours := map[string]bool{}
	for _, p := range written {
		ours[filepath.Clean(p)] = true
	}
	var other []string
	for _, m := range matches {
		if !ours[filepath.Clean(m)] {
			other = append(other, m)
		}
	}
	return other
}
