package kv

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/internal/crashfs"
	"github.com/ringstore/ringstore/internal/durable"
	"github.com/ringstore/ringstore/ioengine"
)

// writeBehind is how many bytes of a table written through the page cache
// may be dirty before their writeback is started (startWriteback).
const writeBehind = 1 << 20

// tableChunk is the size of one write of a table being written with
// O_DIRECT: two chunks are held, one filling while the other is written.
const tableChunk = 256 << 10

// tableFile is a new table being written: sstable.Writer writes into it,
// and sync makes it durable. It counts the bytes written (and reports them
// to the crash-state tests' recorder as writes of path).
//
// Unless the store reads through the page cache (Options.BufferedIO, or a
// file system that refuses O_DIRECT), the table is written with O_DIRECT
// through the engine, in aligned chunks of tableChunk bytes, the next one
// filled while the last is written (ioengine.Engine.Start): no page cache
// copy, no writeback, and nothing to drop afterwards. The last chunk is
// zero-padded to the alignment and the file cut back to its size before
// the fsync. Otherwise its writes go through the page cache, whose
// writeback is started every writeBehind bytes (startWriteback: [0,
// started) is on its way to the device, not durable until the fsync), and
// the clean pages are dropped after the fsync: reads use O_DIRECT.
type tableFile struct {
	f    *os.File
	path string
	n    int64 // bytes written
	err  error // the first failed write; every later one returns it

	// Through the page cache (direct false):
	started   int64
	keepCache bool // the store reads through the page cache too

	// With O_DIRECT:
	direct   bool
	eng      *ioengine.Engine
	bufs     [2][]byte // aligned, tableChunk bytes each
	cur      int       // the chunk being filled
	fill     int       // its bytes
	off      int64     // the file offset of its first byte
	inflight *ioengine.Pending
	reqs     [2][1]ioengine.Request
}

// createTable creates the table file at path, which must not exist, to be
// written with O_DIRECT through eng unless buffered is set or the file
// system refuses O_DIRECT.
func createTable(path string, eng *ioengine.Engine, buffered bool) (*tableFile, error) {
	const flag = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if !buffered {
		f, err := directio.OpenFile(path, flag, 0o644)
		if err == nil {
			crashfs.Created(path, 0)
			return &tableFile{f: f, path: path, direct: true, eng: eng,
				bufs: [2][]byte{getTableChunk(), getTableChunk()}}, nil
		}
		if !errors.Is(err, directio.ErrNotSupported) {
			return nil, err
		}
		// The file exists now (O_EXCL refused nothing): reopen it plain.
		os.Remove(path)
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	crashfs.Created(path, 0)
	return &tableFile{f: f, path: path, keepCache: buffered}, nil
}

// Write writes p after the bytes written before.
func (t *tableFile) Write(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	if !t.direct {
		n, err := t.f.Write(p)
		crashfs.Wrote(t.path, t.n, p[:n])
		t.n += int64(n)
		if t.n-t.started >= writeBehind {
			startWriteback(int(t.f.Fd()), t.started, t.n-t.started)
			t.started = t.n
		}
		if err != nil {
			t.err = err
		}
		return n, err
	}
	crashfs.Wrote(t.path, t.n, p)
	written := 0
	for len(p) > 0 {
		c := copy(t.bufs[t.cur][t.fill:], p)
		t.fill += c
		p = p[c:]
		written += c
		t.n += int64(c)
		if t.fill == tableChunk {
			if err := t.writeChunk(); err != nil {
				t.err = err
				return written, err
			}
		}
	}
	return written, nil
}

// writeChunk starts the write of the chunk being filled (its length a
// multiple of the alignment), waits for the one before it, and turns to
// the other buffer.
func (t *tableFile) writeChunk() error {
	r := &t.reqs[t.cur]
	r[0] = ioengine.Request{Op: ioengine.OpWrite, Fd: int(t.f.Fd()), Off: t.off, Buf: t.bufs[t.cur][:t.fill]}
	p, err := t.eng.Start(r[:])
	if err != nil {
		return fmt.Errorf("write at offset %d: %w", t.off, err)
	}
	werr := t.wait()
	t.inflight = p
	t.off += int64(t.fill)
	t.cur, t.fill = t.cur^1, 0
	return werr
}

// wait waits for the write in flight, if any.
func (t *tableFile) wait() error {
	if t.inflight == nil {
		return nil
	}
	p := t.inflight
	t.inflight = nil
	if err := p.Wait(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// sync writes what is left and fsyncs the file; through the page cache,
// unless the store reads through it too, it then drops the file's clean
// pages.
func (t *tableFile) sync() error {
	if t.err != nil {
		return t.err
	}
	if t.direct {
		if t.fill > 0 {
			padded := (t.fill + directio.BlockSize - 1) / directio.BlockSize * directio.BlockSize
			clear(t.bufs[t.cur][t.fill:padded])
			t.fill = padded
			if err := t.writeChunk(); err != nil {
				t.err = err
				return err
			}
		}
		if err := t.wait(); err != nil {
			t.err = err
			return err
		}
		if t.off != t.n {
			if err := t.f.Truncate(t.n); err != nil {
				t.err = fmt.Errorf("cutting the padding: %w", err)
				return t.err
			}
		}
	}
	if err := durable.Fsync(t.f, t.eng); err != nil {
		t.err = err
		return err
	}
	crashfs.Synced(t.path, 0)
	if !t.direct && !t.keepCache {
		dropPageCache(int(t.f.Fd())) // clean now: reads use O_DIRECT
	}
	return nil
}

// close closes the file, waiting first for a write still in flight (after
// a failure), and gives its chunks back.
func (t *tableFile) close() error {
	t.wait() //nolint:errcheck // only after a failure, which was returned
	for i, b := range t.bufs {
		if b != nil {
			tableChunks.Put(&b)
			t.bufs[i] = nil
		}
	}
	return t.f.Close()
}

// tableChunks recycles the chunks of tables written with O_DIRECT: a flush
// and a compaction each hold two while they write, and a store writes
// tables all the time.
var tableChunks = sync.Pool{New: func() any { b := alignedBuf(tableChunk); return &b }}

func getTableChunk() []byte { return *tableChunks.Get().(*[]byte) }
