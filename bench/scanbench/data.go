package scanbench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ringstore/ringstore/arrowscan"
	"github.com/ringstore/ringstore/arrowscan/events"
)

// dataVersion changes when the way a data set is sized or cut changes, so
// an old one is not taken for a new one.
const dataVersion = 2 // 2: every file has a checksum sidecar

// dataSeed makes the data; fixed, so every run scans the same events.
const dataSeed = 20240601

// dataSet is the events data a run scans.
type dataSet struct {
	Dir      string   `json:"dir"`
	Files    []string `json:"files"` // names in Dir, in time order
	Sizes    []int64  `json:"sizes"`
	Bytes    int64    `json:"bytes"`
	Rows     int64    `json:"rows"`
	Gen      string   `json:"gen"` // events.GenOptions.String()
	Version  int      `json:"version"`
	Target   int64    `json:"target_bytes"`
	Reused   bool     `json:"-"`
	GenTime  float64  `json:"gen_seconds"`
	Created  bool     `json:"-"` // this run made Dir (and removes it unless kept)
	Manifest string   `json:"-"`
}

// Paths returns the data files' paths.
func (d *dataSet) Paths() []string {
	ps := make([]string, len(d.Files))
	for i, f := range d.Files {
		ps[i] = filepath.Join(d.Dir, f)
	}
	return ps
}

const manifestName = "manifest.json"

// dataDirName names the data set of the given size and shape inside --dir.
func dataDirName(target int64, files int, compression string) string {
	return fmt.Sprintf("ringstore-scan-data-v%d-%dMiB-%df-%s", dataVersion, target>>20, files, compression)
}

// filesFor is how many files a data set of target bytes is cut into:
// about 128 MiB each, at least 2 (so that every query crosses a file
// boundary), at most 64.
func filesFor(target int64) int {
	return int(min(64, max(2, (target+(128<<20)-1)/(128<<20))))
}

// prepareData returns the data set of about target bytes in dir: the one
// there when its manifest matches and every file has its recorded size,
// else a new one. Rows are sized from a sample batch generated first.
func prepareData(dir string, target int64, compression string, progress io.Writer) (*dataSet, error) {
	files := filesFor(target)
	d := &dataSet{Dir: filepath.Join(dir, dataDirName(target, files, compression)), Version: dataVersion, Target: target}
	d.Manifest = filepath.Join(d.Dir, manifestName)
	if old, err := readManifest(d.Manifest); err == nil {
		if err := old.check(); err == nil {
			old.Dir, old.Manifest, old.Reused = d.Dir, d.Manifest, true
			fmt.Fprintf(progress, "reusing the data set in %s (%d files, %d MiB, %d rows)\n", old.Dir, len(old.Files), old.Bytes>>20, old.Rows)
			return old, nil
		} else {
			fmt.Fprintf(progress, "data set in %s not reused: %v\n", d.Dir, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(progress, "data set in %s not reused: %v\n", d.Dir, err)
	}

	if _, err := os.Stat(d.Dir); errors.Is(err, os.ErrNotExist) {
		d.Created = true
	}
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench scan: data set: %w", err)
	}
	os.Remove(d.Manifest) // a data set being replaced is not valid until its new manifest is written

	perRow, err := bytesPerRow(d.Dir, compression)
	if err != nil {
		return nil, err
	}
	rows := max(int64(files), int64(float64(target)/perRow))
	rowsPerBatch := int(min(events.DefaultRowsPerBatch, max(4096, rows/int64(files)/8)))
	gen := events.GenOptions{Rows: rows, RowsPerBatch: rowsPerBatch, Files: files, Compression: compression, Seed: dataSeed, Sidecar: true}
	fmt.Fprintf(progress, "generating %d MiB of events into %s (%s; %.1f bytes per row from a sample)...\n", target>>20, d.Dir, gen.String(), perRow)
	t0 := time.Now()
	paths, err := events.Generate(d.Dir, gen)
	if err != nil {
		return nil, fmt.Errorf("bench scan: data set: %w", err)
	}
	d.GenTime = time.Since(t0).Seconds()
	d.Rows, d.Gen = rows, gen.String()
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("bench scan: data set: %w", err)
		}
		d.Files, d.Sizes = append(d.Files, filepath.Base(p)), append(d.Sizes, st.Size())
		d.Bytes += st.Size()
	}
	fmt.Fprintf(progress, "generated %d files, %d MiB, %d rows in %.1fs (%.0f MB/s)\n", len(d.Files), d.Bytes>>20, d.Rows, d.GenTime, float64(d.Bytes)/d.GenTime/1e6)
	if err := d.writeManifest(); err != nil {
		return nil, err
	}
	return d, nil
}

// bytesPerRow generates one sample batch and returns its file size per row.
func bytesPerRow(dir, compression string) (float64, error) {
	tmp, err := os.MkdirTemp(dir, ".sample-")
	if err != nil {
		return 0, fmt.Errorf("bench scan: data set: %w", err)
	}
	defer os.RemoveAll(tmp)
	const rows = events.DefaultRowsPerBatch
	paths, err := events.Generate(tmp, events.GenOptions{Rows: rows, Files: 1, Compression: compression, Seed: dataSeed})
	if err != nil {
		return 0, fmt.Errorf("bench scan: sample data: %w", err)
	}
	st, err := os.Stat(paths[0])
	if err != nil {
		return 0, fmt.Errorf("bench scan: sample data: %w", err)
	}
	return float64(st.Size()) / rows, nil
}

func readManifest(path string) (*dataSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d dataSet
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d.Dir = filepath.Dir(path)
	return &d, nil
}

// check reports why a data set read from a manifest cannot be used.
func (d *dataSet) check() error {
	if d.Version != dataVersion {
		return fmt.Errorf("manifest version %d, want %d", d.Version, dataVersion)
	}
	if len(d.Files) == 0 || len(d.Files) != len(d.Sizes) {
		return fmt.Errorf("manifest lists %d files and %d sizes", len(d.Files), len(d.Sizes))
	}
	var total int64
	for i, f := range d.Files {
		if filepath.Base(f) != f {
			return fmt.Errorf("manifest names %q, not a file in the data directory", f)
		}
		st, err := os.Stat(filepath.Join(d.Dir, f))
		if err != nil {
			return err
		}
		if st.Size() != d.Sizes[i] {
			return fmt.Errorf("%s has %d bytes, the manifest says %d", f, st.Size(), d.Sizes[i])
		}
		if _, err := os.Stat(filepath.Join(d.Dir, f+arrowscan.SidecarSuffix)); err != nil {
			return fmt.Errorf("%s has no checksum sidecar: %w", f, err)
		}
		total += st.Size()
	}
	if total != d.Bytes {
		return fmt.Errorf("files hold %d bytes, the manifest says %d", total, d.Bytes)
	}
	return nil
}

func (d *dataSet) writeManifest() error {
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	tmp := d.Manifest + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("bench scan: manifest: %w", err)
	}
	_, werr := f.Write(append(data, '\n'))
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("bench scan: manifest: %w", err)
	}
	if err := os.Rename(tmp, d.Manifest); err != nil {
		return fmt.Errorf("bench scan: manifest: %w", err)
	}
	return nil
}

// remove deletes the data set's files and, when this run made it, its
// directory.
func (d *dataSet) remove() error {
	var errs []error
	if err := os.Remove(d.Manifest); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	for _, f := range d.Files {
		for _, name := range []string{f, f + arrowscan.SidecarSuffix} {
			if err := os.Remove(filepath.Join(d.Dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if d.Created {
		if err := os.Remove(d.Dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
