package bufpool

import (
	"errors"
	"fmt"
	"io"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// ReadError is a failed load: the file, the frame's offset and length, and
// the cause (an *ioengine.OpError wrapping the errno, or ErrShortRead), so
// errors.Is(err, unix.EIO) works. Every Pin waiting for the load gets the
// same *ReadError.
type ReadError struct {
	File FileID
	Name string
	Off  int64 // file offset of the frame
	Len  int   // bytes the frame should hold
	Err  error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("bufpool: load of %s (file %d) offset %d length %d: %v", e.Name, e.File, e.Off, e.Len, e.Err)
}

func (e *ReadError) Unwrap() error { return e.Err }

// readLen is how much a load of f reads: its valid bytes rounded up to
// directio.BlockSize, as O_DIRECT demands. It never exceeds FrameSize.
func readLen(f *Frame) int {
	return (f.n + directio.BlockSize - 1) &^ (directio.BlockSize - 1)
}

// ioWorker is one I/O goroutine: it takes up to MaxBatch queued loads
// (demand before prefetch), hands them to the engine in one call, and
// completes them. It exits once the pool is closed and no demand load is
// queued; queued prefetches are then dropped.
func (p *Pool) ioWorker() {
	defer p.workers.Done()
	batch := make([]*Frame, 0, p.opts.MaxBatch)
	reqs := make([]ioengine.Request, 0, p.opts.MaxBatch)
	var loads []windowLoad
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for p.demandQ.len() == 0 && p.prefetchQ.len() == 0 && !p.closed {
			p.work.Wait()
		}
		if p.closed && p.demandQ.len() == 0 {
			p.dropQueuedPrefetchesLocked()
			return
		}
		batch, reqs, loads = batch[:0], reqs[:0], loads[:0]
		for take := p.batchLimitLocked(); len(batch) < take; {
			f := p.demandQ.popFront()
			if f == nil {
				if f = p.prefetchQ.popFront(); f == nil {
					break
				}
			}
			f.io = ioIssued
			batch = append(batch, f)
			reqs = append(reqs, ioengine.Request{Op: ioengine.OpRead, File: f.file.f, Off: f.off, Buf: f.buf[:readLen(f)]})
		}
		if p.demandQ.len()+p.prefetchQ.len() > 0 {
			p.work.Signal() // more than one batch: let another worker take the rest
		}
		p.stats.EngineCalls++
		p.busyWorkers++
		p.mu.Unlock()
		if p.testBeforeDo != nil {
			p.testBeforeDo(len(reqs))
		}
		err := p.eng.Do(reqs)
		loads = p.mapWindows(batch, reqs, err, loads)
		p.mu.Lock()
		p.busyWorkers--
		p.completeLocked(batch, reqs, err)
		clear(batch)
		clear(reqs)
	}
}

// batchLimitLocked is how many queued loads a worker takes for one engine
// call: MaxBatch. On the syscall backend, where an engine call runs its
// reads one after another on the calling worker, the queue is shared out
// among the workers instead, so that they read in parallel.
func (p *Pool) batchLimitLocked() int {
	if p.eng.Backend() != ioengine.BackendSyscall || p.opts.IOWorkers == 1 {
		return p.opts.MaxBatch
	}
	queued := p.demandQ.len() + p.prefetchQ.len()
	free := p.opts.IOWorkers - p.busyWorkers // this worker and the idle ones
	return max(1, min(p.opts.MaxBatch, (queued+free-1)/free))
}

// loadCause is why the load of a frame of n valid bytes in a file of size
// bytes failed, nil if it did not.
func loadCause(r *ioengine.Request, n int, size int64, doErr error) error {
	switch {
	case r.N >= n && (r.Err == nil || errors.Is(r.Err, io.EOF)):
		return nil
	case r.Err != nil && !errors.Is(r.Err, io.EOF):
		return r.Err
	case r.Err == nil && doErr != nil:
		return doErr // the engine refused the whole call (closed)
	default:
		return fmt.Errorf("%w: the read ended %d bytes into the frame, %d bytes short of the registered size %d",
			ErrShortRead, r.N, n-r.N, size)
	}
}

// mapWindows maps the frames of a finished engine call in their files'
// windows (Options.Windows), before completeLocked publishes them. It runs
// on the loader without mu and reads the frames' slot, key, length and
// file: they were set under mu before the loads were issued, and nothing
// changes them while a frame is loading. It returns loads for reuse.
func (p *Pool) mapWindows(batch []*Frame, reqs []ioengine.Request, doErr error, loads []windowLoad) []windowLoad {
	if p.win == nil {
		return loads
	}
	loads = loads[:0]
	for i, f := range batch {
		loads = append(loads, windowLoad{slot: f.slot, key: f.key, ok: loadCause(&reqs[i], f.n, f.file.size, doErr) == nil})
	}
	p.win.mapLoads(loads)
	return loads
}

// completeLocked records the results of one engine call.
func (p *Pool) completeLocked(batch []*Frame, reqs []ioengine.Request, doErr error) {
	for i, f := range batch {
		r := &reqs[i]
		cause := loadCause(r, f.n, f.file.size, doErr)
		p.stats.Loads++
		p.stats.BytesRead += uint64(r.N)
		p.loading--
		f.io = ioNone
		if cause == nil {
			f.state = stateResident
		} else {
			p.stats.ReadErrors++
			f.loadErr = &ReadError{File: f.key.file(), Name: f.file.name, Off: f.off, Len: f.n, Err: cause}
			if f.prefetch && f.pins.Load() == 0 && !p.logged {
				p.logged = true
				p.opts.Logf("bufpool: prefetch failed (later failures are only counted): %v", f.loadErr)
			}
			// Out of the table: a later Pin loads it again. Pinned by
			// waiters, it stays detached (with loadErr) until they let go.
			p.detachLocked(f)
		}
		f.loaded.Broadcast()
	}
	p.wakeStalledLocked()
	if invariantsOn {
		p.mustCheckInvariantsLocked()
	}
}

// dropQueuedPrefetchesLocked frees the frames of prefetch loads that were
// never issued (at Close).
func (p *Pool) dropQueuedPrefetchesLocked() {
	for f := p.prefetchQ.popFront(); f != nil; f = p.prefetchQ.popFront() {
		f.io = ioNone
		p.loading--
		p.removeFromTableLocked(f)
		p.freeLocked(f)
		p.stats.PrefetchDropped++
		f.loaded.Broadcast() // Unregister may wait for it
	}
}
