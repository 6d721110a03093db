package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// segFileState is where a segment's file is in its life. The committer moves
// a segment from active to sealed and hands it to the job goroutine; the
// job goroutine moves it through the table states; whoever removes the
// file (a truncation job, or the committer for TruncateBack and an
// emptying TruncateFront) moves it to removed or recycled. Every change is
// made under lifecycle.mu.
//
//	active ─seal─▶ sealed ─queue table─▶ tableQueued ─job─▶ tableWriting ─▶ reusable
//	                  │                       │                  │ (failed) ─▶ sealed
//	                  └───────────────────────┴── removal waits ─┘
//	sealed, tableQueued, reusable ─drop + removal─▶ removed
//	reusable (kept: at most maxReuse) ─drop + removal─▶ recycled (recycle-N.seg.tmp) ─▶ a spare
type segFileState uint8

const (
	// segActive: the segment appends go to (recovery's last segment too).
	segActive segFileState = iota
	// segSealed: its trailer is durable; its file will not be reused
	// (no next table, or writing it failed).
	segSealed
	// segTableQueued: sealed, its next stale table waits in the job
	// queue.
	segTableQueued
	// segTableWriting: the job goroutine is writing and flushing that
	// table; a removal waits for it to end.
	segTableWriting
	// segReusable: sealed with its next table durable: a truncation may
	// keep the file for a later spare.
	segReusable
	// segRemoved: the file is gone from the log (unlinked); nothing
	// writes it again.
	segRemoved
	// segRecycled: the file was renamed recycle-N.seg.tmp for a spare.
	segRecycled
)

// spareState is where the next segment's file, made ahead of need, is.
type spareState uint8

const (
	spareNone   spareState = iota // not asked for
	spareWanted                   // asked for; the job goroutine makes it next
	spareMaking                   // being made (new, or from a recycled file)
	spareReady                    // made: ready holds it
	spareFailed                   // making it failed: the rotation creates the file itself
)

// lifecycle owns the files of the log's segments beyond what the committer
// writes: the spare made ahead of need, the next stale tables of sealed
// segments (RecycleSegments), the files kept for reuse, and the durable
// part of front truncations. One goroutine runs its jobs: the spare first
// when one is wanted, then the queue in order (tables and truncations).
// Truncations are done in the order they were made: wal.meta's slot
// written and flushed, then the dropped files removed or kept for reuse,
// then the caller answered. The committer waits for every queued
// truncation to be done (truncsIdle) before it writes wal.meta itself or
// removes segments from the back.
type lifecycle struct {
	mu   sync.Mutex
	cond *sync.Cond // signaled on every change below

	// Guarded by mu.
	spare      spareState
	ready      *ioengine.File    // spareReady: the file (its Name is its path)
	readyStale format.StaleTable // ready's stale table: non-nil for a recycled file
	spareErr   error             // spareFailed: why
	jobs       []fileJob         // oldest first
	truncs     int               // truncation jobs queued or running
	reuse      []string          // recycled files (segRecycled), oldest first
	reused     int               // files kept for reuse so far (their names' N)
	stop       bool

	n    int // spares made (their names' N); owned by the job goroutine
	done chan struct{}
}

// fileJob is a job of the lifecycle's queue: a sealed segment's next stale
// table to write in its file (held open: the name may be another file's by
// then), or a front truncation to make durable.
type fileJob struct {
	seg   *segment
	f     *ioengine.File
	table []byte

	trunc bool
	seq   uint64 // the truncation's new first seq
	drop  []droppedSegment
	req   *request
}

func (l *Log) startLifecycle() {
	c := &l.files
	c.cond = sync.NewCond(&c.mu)
	c.done = make(chan struct{})
	go l.lifecycleLoop()
}

// lifecycleLoop runs the jobs until stopped. A spare is made when one is
// asked for: when the active segment passes half full, or when a rotation
// finds none. Making it later would stall the rotation; making it at once
// after the last rotation would compete for the device with the appends
// at the start of every segment (and of every benchmark). At stop the
// queued truncations are still done (their callers wait); tables and
// spares are dropped.
func (l *Log) lifecycleLoop() {
	c := &l.files
	defer close(c.done)
	c.mu.Lock()
	for {
		for c.spare != spareWanted && len(c.jobs) == 0 && !c.stop {
			c.cond.Wait()
		}
		if c.stop {
			for _, j := range c.jobs {
				if j.trunc {
					c.mu.Unlock()
					l.truncateJob(j)
					c.mu.Lock()
					c.truncs--
				} else {
					j.f.Close()
					j.seg.state = segSealed
				}
			}
			c.jobs = nil
			c.cond.Broadcast()
			c.mu.Unlock()
			return
		}
		if c.spare == spareWanted {
			c.spare = spareMaking
			var reuse string
			if len(c.reuse) > 0 {
				reuse, c.reuse = c.reuse[0], c.reuse[1:]
			}
			c.mu.Unlock()
			f, stale, err := l.makeNextSpare(reuse)
			c.mu.Lock()
			c.ready, c.readyStale, c.spareErr = f, stale, err
			c.spare = spareReady
			if err != nil {
				c.spare = spareFailed
			}
			c.cond.Broadcast()
			continue
		}
		j := c.jobs[0]
		c.jobs[0] = fileJob{}
		c.jobs = c.jobs[1:]
		if j.trunc {
			c.mu.Unlock()
			l.truncateJob(j)
			c.mu.Lock()
			c.truncs--
			c.cond.Broadcast()
			continue
		}
		if j.seg.state != segTableQueued {
			j.f.Close() // removed meanwhile
			continue
		}
		j.seg.state = segTableWriting
		c.mu.Unlock()
		ok := l.writeNextTable(j)
		c.mu.Lock()
		j.seg.state = segSealed
		if ok {
			j.seg.state = segReusable
		}
		c.cond.Broadcast()
	}
}

// makeNextSpare makes the next spare from the recycled file reuse (if not
// ""), or a new file when there is none or reusing it fails.
func (l *Log) makeNextSpare(reuse string) (*ioengine.File, format.StaleTable, error) {
	if reuse != "" {
		f, stale, err := l.makeRecycledSpare(reuse)
		if err == nil {
			return f, stale, nil
		}
		l.opts.Logf("wal: reusing %s: %v (making a new segment file instead)", reuse, err)
		os.Remove(reuse)
	}
	f, err := l.makeSpare()
	if err != nil {
		l.opts.Logf("wal: preparing the next segment: %v (the next rotation creates it without zero-filling)", err)
	}
	return f, nil, err
}

// truncateJob makes a front truncation durable: the first seq in
// wal.meta, then the dropped files removed or kept; then it answers the
// caller.
func (l *Log) truncateJob(j fileJob) {
	err := l.Err()
	if err == nil {
		if err = l.recordFirst(j.seq); err != nil {
			err = l.fail(err)
		} else {
			err = l.removeDropped(j.drop)
		}
	}
	j.req.finish(err)
}

// requestSpare asks for the next segment to be made ahead of need.
func (l *Log) requestSpare() {
	c := &l.files
	c.mu.Lock()
	if c.spare == spareNone {
		c.spare = spareWanted
		c.cond.Broadcast()
	}
	c.mu.Unlock()
}

// takeSpare returns the spare segment file, waiting for it to be made if
// needed, or nil when making it failed (or before the job goroutine runs,
// during recovery), and its stale table: nil for a new file, non-nil for
// a recycled one.
func (l *Log) takeSpare() (*ioengine.File, format.StaleTable) {
	c := &l.files
	if c.cond == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spare == spareNone && !c.stop {
		c.spare = spareWanted
		c.cond.Broadcast()
	}
	for (c.spare == spareWanted || c.spare == spareMaking) && !c.stop {
		c.cond.Wait()
	}
	f, stale := c.ready, c.readyStale
	if c.spare == spareReady || c.spare == spareFailed {
		c.ready, c.readyStale, c.spareErr, c.spare = nil, nil, nil, spareNone
	}
	return f, stale
}

// sealed records that seg's trailer is durable. Runs on the committer.
func (l *Log) sealed(seg *segment) {
	c := &l.files
	c.mu.Lock()
	if seg.state == segActive {
		seg.state = segSealed
	}
	c.mu.Unlock()
}

// queueNextTable queues the next stale table of seg, just sealed, and
// reports whether it was queued.
func (l *Log) queueNextTable(seg *segment, table []byte) bool {
	c := &l.files
	if c.cond == nil {
		return false
	}
	f, err := ioengine.OpenFile(seg.path, os.O_RDWR, 0)
	if err != nil {
		l.opts.Logf("wal: %s will not be reused: %v", seg.path, err)
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop || seg.state != segSealed {
		f.Close()
		return false
	}
	seg.state = segTableQueued
	c.jobs = append(c.jobs, fileJob{seg: seg, f: f, table: table})
	c.cond.Broadcast()
	return true
}

// queueTruncation queues the durable part of a front truncation to seq
// whose segments drop are already out of the log; the job answers r.
func (l *Log) queueTruncation(seq uint64, drop []droppedSegment, r *request) {
	c := &l.files
	c.mu.Lock()
	c.jobs = append(c.jobs, fileJob{trunc: true, seq: seq, drop: drop, req: r})
	c.truncs++
	c.cond.Broadcast()
	c.mu.Unlock()
}

// truncsIdle waits until every queued truncation is done: wal.meta and
// the files of dropped segments are then the caller's.
func (l *Log) truncsIdle() {
	c := &l.files
	if c.cond == nil {
		return
	}
	c.mu.Lock()
	for c.truncs > 0 {
		c.cond.Wait()
	}
	c.mu.Unlock()
}

// writeNextTable writes and flushes a sealed segment's next stale table
// and reports whether it is durable. A failure only keeps the file from
// being reused.
func (l *Log) writeNextTable(j fileJob) bool {
	defer j.f.Close()
	if err := l.writeFile(j.f, j.seg.path, format.StaleTableOffset(j.seg.size), j.table, false); err != nil {
		l.opts.Logf("wal: %s will not be reused: %v", j.seg.path, err)
		return false
	}
	if err := l.syncFile(j.f, j.seg.path); err != nil {
		l.opts.Logf("wal: %s will not be reused: %v", j.seg.path, err)
		return false
	}
	return true
}

// removeSegment takes a segment's file out of the directory once no next
// stale table is being written into it: kept for reuse (renamed
// recycle-N.seg.tmp) when reuse is set, its table is durable and fewer
// than maxReuse files are kept, removed otherwise (and the directory
// flushed if durably). The rename and the plain removal are not flushed.
func (l *Log) removeSegment(s *segment, reuse, durably bool) error {
	c := &l.files
	c.mu.Lock()
	for s.state == segTableWriting {
		c.cond.Wait()
	}
	if reuse && s.state == segReusable && c.cond != nil && !c.stop && len(c.reuse) < maxReuse {
		c.reused++
		to := filepath.Join(l.dir, fmt.Sprintf("%s%d%s%s", recyclePrefix, c.reused, segmentSuffix, tmpSuffix))
		err := l.rename(s.path, to)
		if err == nil {
			s.state = segRecycled
			c.reuse = append(c.reuse, to)
		}
		c.mu.Unlock()
		return err
	}
	s.state = segRemoved
	c.mu.Unlock()
	if durably {
		return l.removeDurably(s.path)
	}
	return l.remove(s.path)
}

// stopLifecycle does the queued truncations, stops the job goroutine and
// removes an unused spare and the recycled files.
func (l *Log) stopLifecycle() {
	c := &l.files
	if c.cond == nil {
		return
	}
	c.mu.Lock()
	c.stop = true
	c.cond.Broadcast()
	c.mu.Unlock()
	<-c.done
	if c.ready != nil {
		c.ready.Close()
		os.Remove(c.ready.Name())
		c.ready = nil
	}
	for _, p := range c.reuse {
		os.Remove(p)
	}
	c.reuse = nil
}
