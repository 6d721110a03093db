package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ringstore/ringstore/kv/manifest"
	"github.com/ringstore/ringstore/kv/sstable"
	"github.com/ringstore/ringstore/wal"
)

// kvTableJSON is one table of `ringstore kv verify --json`.
type kvTableJSON struct {
	File    string `json:"file"`
	Level   int    `json:"level"`
	Bytes   int64  `json:"bytes"`
	Blocks  int    `json:"blocks"`
	Entries uint64 `json:"entries"`
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
}

// kvVerifyJSON is what `ringstore kv verify --json` prints.
type kvVerifyJSON struct {
	Dir        string        `json:"dir"`
	OK         bool          `json:"ok"`
	Backend    string        `json:"backend"`
	Manifest   string        `json:"manifest"`
	Tables     []kvTableJSON `json:"tables"`
	Blocks     int           `json:"blocks"`
	Bytes      int64         `json:"bytes"`
	Unlisted   []string      `json:"unlisted_tables,omitempty"` // *.sst files the manifest does not name
	Log        string        `json:"log"`                       // "ok", "none" or the damage
	Damage     *damageJSON   `json:"damage,omitempty"`          // the first damage: file and offset
	Error      string        `json:"error,omitempty"`
	FlushedSeq uint64        `json:"flushed_seq"`
}

// kvVerifyBackend is how kv verify reads: it opens no engine.
const kvVerifyBackend = "syscall (kv verify reads the files with pread; no engine, no lock)"

// kvVerify reads every file of the store in dir without opening it (no
// lock, nothing written): the manifest and its rules, every table the
// manifest lists (size, properties against the manifest, every data
// block's checksum and entries), and the log (wal.Verify). The first
// damage is the error, naming the file and offset.
func kvVerify(dir string, f *kvFlags, stdout io.Writer) error {
	r := kvVerifyJSON{Dir: dir, Backend: kvVerifyBackend, Manifest: "ok", Log: "ok"}
	var errs []error
	fail := func(err error, file string, off int64) {
		errs = append(errs, err)
		if r.Damage == nil {
			r.Damage = &damageJSON{File: file, Offset: off, What: err.Error()}
		}
	}
	v, err := manifest.Load(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		r.Manifest = "none (no table was ever written)"
		v = &manifest.Version{}
	case err != nil:
		r.Manifest = err.Error()
		off := int64(0)
		var ce *manifest.CorruptError
		if errors.As(err, &ce) {
			off = ce.Offset
		}
		fail(err, filepath.Join(dir, manifest.FileName), off)
		v = &manifest.Version{}
	default:
		if err := v.Validate(); err != nil {
			r.Manifest = err.Error()
			fail(fmt.Errorf("%s: %w", filepath.Join(dir, manifest.FileName), err), filepath.Join(dir, manifest.FileName), 0)
		}
	}
	r.FlushedSeq = v.FlushedSeq
	listed := map[string]bool{}
	for level, files := range v.Levels {
		for _, fm := range files {
			name := fmt.Sprintf("%06d.sst", fm.Num)
			listed[name] = true
			t, err := verifyTable(filepath.Join(dir, name), level, fm)
			if err != nil {
				t.Error = err.Error()
				file, off := filepath.Join(dir, name), int64(0)
				var ce *sstable.CorruptError
				if errors.As(err, &ce) {
					off = ce.Offset
				}
				fail(err, file, off)
			}
			r.Tables = append(r.Tables, t)
			r.Blocks += t.Blocks
			r.Bytes += t.Bytes
		}
	}
	ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	sort.Strings(ssts)
	for _, p := range ssts {
		if !listed[filepath.Base(p)] {
			r.Unlisted = append(r.Unlisted, filepath.Base(p))
		}
	}
	logDir := filepath.Join(dir, "wal")
	if _, err := os.Stat(logDir); errors.Is(err, os.ErrNotExist) {
		r.Log = "none"
	} else if _, err := wal.Verify(logDir); err != nil {
		r.Log = err.Error()
		if d := damageOf(err); d != nil {
			errs = append(errs, err)
			if r.Damage == nil {
				r.Damage = d
			}
		} else {
			fail(err, logDir, 0)
		}
	}
	r.OK = len(errs) == 0
	var err0 error
	if len(errs) > 0 {
		err0 = fmt.Errorf("%s: %d problems, the first: %w", dir, len(errs), errs[0])
		r.Error = errs[0].Error()
	}
	if f.json {
		if err := printJSON(stdout, r); err != nil {
			return err
		}
		return wrapCmd("kv verify", err0)
	}
	fmt.Fprintf(stdout, "store     %s\nmanifest  %s (flushed seq %d)\n", dir, r.Manifest, r.FlushedSeq)
	for _, t := range r.Tables {
		state := "ok"
		if !t.OK {
			state = "DAMAGED: " + t.Error
		}
		fmt.Fprintf(stdout, "L%d %s  %d blocks, %d entries, %d bytes: %s\n", t.Level, t.File, t.Blocks, t.Entries, t.Bytes, state)
	}
	if len(r.Unlisted) > 0 {
		fmt.Fprintf(stdout, "note      %d tables the manifest does not list (left by a crash; Open removes them): %s\n", len(r.Unlisted), strings.Join(r.Unlisted, ", "))
	}
	fmt.Fprintf(stdout, "log       %s\n", r.Log)
	if r.OK {
		fmt.Fprintf(stdout, "ok: %d tables, %d blocks, %d bytes checked\n", len(r.Tables), r.Blocks, r.Bytes)
	}
	return wrapCmd("kv verify", err0)
}

// verifyTable checks one table against its manifest record and reads
// every data block (its checksum, entries and keys).
func verifyTable(path string, level int, fm manifest.FileMeta) (kvTableJSON, error) {
	t := kvTableJSON{File: filepath.Base(path), Level: level, Entries: fm.Entries}
	st, err := os.Stat(path)
	if err != nil {
		return t, fmt.Errorf("the manifest lists %s: %w", filepath.Base(path), err)
	}
	t.Bytes = st.Size()
	if uint64(st.Size()) != fm.Size {
		return t, fmt.Errorf("%s is %d bytes, the manifest says %d", path, st.Size(), fm.Size)
	}
	r, err := sstable.Open(path)
	if err != nil {
		return t, err
	}
	defer r.Close()
	p := r.Properties()
	switch {
	case p.Entries != fm.Entries:
		return t, fmt.Errorf("%s holds %d entries, the manifest says %d", path, p.Entries, fm.Entries)
	case p.MaxSeq != fm.MaxSeq:
		return t, fmt.Errorf("%s: max seq %d, the manifest says %d", path, p.MaxSeq, fm.MaxSeq)
	case p.Entries > 0 && (sstable.Compare(p.Smallest, fm.Smallest) != 0 || sstable.Compare(p.Largest, fm.Largest) != 0):
		return t, fmt.Errorf("%s: keys %s..%s, the manifest says %s..%s", path, p.Smallest, p.Largest, fm.Smallest, fm.Largest)
	}
	file, err := os.Open(path)
	if err != nil {
		return t, err
	}
	defer file.Close()
	var buf []byte
	for i := range r.NumBlocks() {
		h := r.Block(i)
		if uint64(cap(buf)) < h.Len {
			buf = make([]byte, h.Len)
		}
		buf = buf[:h.Len]
		if _, err := file.ReadAt(buf, int64(h.Offset)); err != nil {
			return t, fmt.Errorf("%s: reading the block at offset %d: %w", path, h.Offset, err)
		}
		if _, err := r.DecodeBlock(h, buf); err != nil {
			return t, err
		}
		t.Blocks++
	}
	t.OK = true
	return t, nil
}
