package kv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ringstore/ringstore/internal/crashfs"
	"github.com/ringstore/ringstore/kv/manifest"
)

// Checkpoint writes a consistent copy of the store to dir, which must not
// exist: it creates dir (the claim: it fails if anything is there), flushes
// the memtable, hard-links (or, across file systems, copies) every table of
// the current version into dir and writes a manifest naming them last, so a
// directory without MANIFEST is no checkpoint. Writes may go on meanwhile;
// the checkpoint holds every write committed before Checkpoint was called
// and possibly some later ones, always a prefix of the commit order.
// Open(dir) opens it as a store of its own. On failure Checkpoint removes
// what it put in dir, and dir.
//
// ctx bounds the waits: for the flush (behind a write stall, or queued
// writes) and between the tables it links or copies. When ctx is done
// Checkpoint removes what it made and returns ctx.Err() (wrapped); the
// memtable it made immutable is still flushed in the background.
func (db *DB) Checkpoint(ctx context.Context, dir string) error {
	if db.opts.ReadOnly {
		return ErrOpenedReadOnly
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	if err := mkdirAll(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("kv: checkpoint: %s already exists", dir)
		}
		return fmt.Errorf("kv: checkpoint: %w", err)
	}
	crashfs.MadeDir(dir)
	var made []string
	fail := func(err error) error {
		for _, p := range made {
			os.Remove(p)
			crashfs.Removed(p)
		}
		os.Remove(dir)
		return fmt.Errorf("kv: checkpoint to %s: %w", dir, err)
	}
	if err := db.flush(ctx); err != nil {
		return fail(err)
	}
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return fail(ErrClosed)
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
	for _, lvl := range v.levels {
		for _, t := range lvl {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
			dst := filepath.Join(dir, filepath.Base(t.path))
			if err := os.Link(t.path, dst); err != nil {
				if !errors.Is(err, syscall.EXDEV) && !errors.Is(err, syscall.EPERM) {
					return fail(err)
				}
				if err := copyFile(t.path, dst); err != nil {
					return fail(err)
				}
			} else {
				crashfs.Linked(t.path, dst)
			}
			made = append(made, dst)
		}
	}
	// The fsyncs go through the store's engine (durable.Fsync): on an
	// engine that parks its waits, the caller's P runs others meanwhile.
	if err := syncDirVia(dir, db.eng); err != nil {
		return fail(err)
	}
	made = append(made, filepath.Join(dir, manifest.TempName), filepath.Join(dir, manifest.FileName))
	if err := manifest.WriteVia(dir, mv, db.eng); err != nil {
		return fail(err)
	}
	return syncDirVia(filepath.Dir(dir), db.eng)
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

// IsCheckpoint says whether dir holds a whole checkpoint: Checkpoint
// writes its manifest last.
func IsCheckpoint(dir string) bool {
	info, err := os.Stat(filepath.Join(dir, manifest.FileName))
	return err == nil && info.Mode().IsRegular()
}

// CloneCheckpoint makes dir, which must not exist, a copy of the
// checkpoint in checkpointDir that Open opens as a store of its own: the
// checkpoint's files hard-linked into it (copied across file systems),
// the manifest last, dir synced. The checkpoint is left as it was, so it
// can be cloned again.
func CloneCheckpoint(checkpointDir, dir string) error {
	ents, err := os.ReadDir(checkpointDir)
	if err != nil {
		return fmt.Errorf("kv: clone checkpoint: %w", err)
	}
	if _, err := os.Stat(filepath.Join(checkpointDir, manifest.FileName)); err != nil {
		return fmt.Errorf("kv: clone checkpoint: %s is not a checkpoint: %w", checkpointDir, err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("kv: clone checkpoint: %w", err)
	}
	link := func(name string) error {
		src, dst := filepath.Join(checkpointDir, name), filepath.Join(dir, name)
		if err := os.Link(src, dst); err != nil {
			if !errors.Is(err, syscall.EXDEV) && !errors.Is(err, syscall.EPERM) {
				return err
			}
			return copyFile(src, dst)
		}
		return nil
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || e.Name() == lockName || e.Name() == manifest.FileName {
			continue
		}
		if err := link(e.Name()); err != nil {
			return fmt.Errorf("kv: clone checkpoint: %w", err)
		}
	}
	if err := link(manifest.FileName); err != nil {
		return fmt.Errorf("kv: clone checkpoint: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dir))
}
