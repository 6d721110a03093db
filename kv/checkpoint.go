package kv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ringstore/ringstore/kv/manifest"
)

// Checkpoint writes a consistent copy of the store to dir, which must not
// exist: it flushes the memtable, then hard-links (or, across file systems,
// copies) every table of the current version into dir and writes a manifest
// naming them. Writes may go on meanwhile; the checkpoint holds every write
// committed before Checkpoint was called and possibly some later ones, always
// a prefix of the commit order. Open(dir) opens it as a store of its own.
func (db *DB) Checkpoint(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("kv: checkpoint: %s already exists", dir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	if err := db.Flush(); err != nil {
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return ErrClosed
	}
	v := db.current
	v.ref()
	mv := v.manifest(db.nextFileNum)
	db.mu.Unlock()
	defer func() {
		db.mu.Lock()
		db.unrefVersionLocked(v)
		db.mu.Unlock()
	}()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	fail := func(err error) error {
		os.RemoveAll(tmp)
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	for _, lvl := range v.levels {
		for _, t := range lvl {
			dst := filepath.Join(tmp, filepath.Base(t.path))
			if err := os.Link(t.path, dst); err != nil {
				if !errors.Is(err, syscall.EXDEV) && !errors.Is(err, syscall.EPERM) {
					return fail(err)
				}
				if err := copyFile(t.path, dst); err != nil {
					return fail(err)
				}
			}
		}
	}
	if err := manifest.Write(tmp, mv); err != nil {
		return fail(err)
	}
	if err := syncDir(tmp); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fail(err)
	}
	return syncDir(filepath.Dir(dir))
}

// copyFile copies src to a new file dst and flushes it.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
