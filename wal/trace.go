package wal

import (
	"path/filepath"
	"sync/atomic"

	"github.com/ringstore/ringstore/internal/crashfs"
)

// The trace records every change the log makes to its files, for the
// crash-state tests, which rebuild from it the states a power loss could
// leave. It is off (nil) outside tests.

type traceOp uint8

const (
	traceCreate  traceOp = iota + 1 // a new file of size bytes (zeros)
	traceWrite                      // data written at off (not yet durable)
	traceSync                       // fdatasync returned: write id (or, for 0, every earlier write to the file) is durable
	traceRename                     // path renamed to path2
	traceRemove                     // path removed
	traceSyncDir                    // the directory's earlier creates, renames and removes are durable
	traceAck                        // entries up to seq were acknowledged
)

type traceEvent struct {
	op    traceOp
	id    uint64 // of a write; for a sync, the write it was linked to
	path  string // base name in the log's directory
	path2 string
	off   int64
	size  int64
	data  []byte // a copy
	seq   uint64
}

var traceIDs atomic.Uint64

func (l *Log) traceEv(ev traceEvent) {
	if l.opts.trace != nil {
		l.opts.trace(ev)
	}
	if crashfs.On() {
		p, p2 := filepath.Join(l.dir, ev.path), filepath.Join(l.dir, ev.path2)
		switch ev.op {
		case traceCreate:
			crashfs.Created(p, ev.size)
		case traceWrite:
			crashfs.Record(crashfs.Event{Op: crashfs.OpWrite, Path: p, Off: ev.off, Data: ev.data, ID: ev.id})
		case traceSync:
			crashfs.Synced(p, ev.id)
		case traceRename:
			crashfs.Renamed(p, p2)
		case traceRemove:
			crashfs.Removed(p)
		case traceSyncDir:
			crashfs.SyncedDir(l.dir)
		}
	}
}

func (l *Log) traceCreate(path string, size int64) {
	if l.tracing() {
		l.traceEv(traceEvent{op: traceCreate, path: filepath.Base(path), size: size})
	}
}

func (l *Log) traceWrite(path string, off int64, data []byte) uint64 {
	if !l.tracing() {
		return 0
	}
	id := traceIDs.Add(1)
	l.traceEv(traceEvent{op: traceWrite, id: id, path: filepath.Base(path), off: off, data: append([]byte(nil), data...)})
	return id
}

func (l *Log) traceSync(path string, id uint64) {
	if l.tracing() {
		l.traceEv(traceEvent{op: traceSync, id: id, path: filepath.Base(path)})
	}
}

func (l *Log) traceRename(from, to string) {
	if l.tracing() {
		l.traceEv(traceEvent{op: traceRename, path: filepath.Base(from), path2: filepath.Base(to)})
	}
}

func (l *Log) traceRemove(path string) {
	if l.tracing() {
		l.traceEv(traceEvent{op: traceRemove, path: filepath.Base(path)})
	}
}

func (l *Log) traceSyncDir() {
	if l.tracing() {
		l.traceEv(traceEvent{op: traceSyncDir})
	}
}

func (l *Log) traceAck(seq uint64) {
	if l.tracing() {
		l.traceEv(traceEvent{op: traceAck, seq: seq})
	}
}

// tracing reports whether changes are recorded: by the wal's own
// crash-state test, or by a crashfs recorder (kv's).
func (l *Log) tracing() bool { return l.opts.trace != nil || crashfs.On() }
