package arrowscan

import (
	"errors"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// mappedFetcher hands arrow-go the batch's body as a slice of the
// read-only mapping of the file, offsets unchanged: no copy and no read of
// our own. Pages are faulted in only where arrow-go touches them, which is
// the projected buffers only.
type mappedFetcher struct {
	f     *File
	p     *projection
	ivs   []interval
	place []placed
}

func (x *mappedFetcher) next(i int) (*memory.Buffer, memory.Allocator, []placed, error) {
	blk := x.f.footer.RecordBatches[i]
	x.ivs = x.p.intervals(&x.f.batches[i], 0, x.ivs)
	x.place = x.place[:0]
	for _, iv := range x.ivs {
		x.place = append(x.place, placed{iv.start, iv.end, iv.start})
	}
	lo, hi := blk.BodyOffset(), blk.End()
	if c := x.f.check; c != nil {
		for _, iv := range x.ivs {
			clo, chi := c.span(lo+iv.start, lo+iv.end)
			if err := c.verify(clo, x.f.mapping[clo:chi], true); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	return memory.NewBufferBytes(x.f.mapping[lo:hi:hi]), nil, x.place, nil
}

func (x *mappedFetcher) close() {}

// preadGap: intervals closer than this are read with one pread.
const preadGap = 4096

// preadFetcher reads each batch's intervals with pread through the page
// cache, on the decoder's goroutine.
type preadFetcher struct {
	f      *File
	p      *projection
	bodies *bodyPool
	ivs    []interval
	place  []placed
	chunks []chunk // sidecar checks: the chunk-aligned reads
}

func newPreadFetcher(f *File, p *projection) *preadFetcher {
	return &preadFetcher{f: f, p: p, bodies: newBodyPool(false, 2)}
}

func (x *preadFetcher) next(i int) (*memory.Buffer, memory.Allocator, []placed, error) {
	bm := &x.f.batches[i]
	base := x.f.footer.RecordBatches[i].BodyOffset()
	x.ivs = x.p.intervals(bm, preadGap, x.ivs)
	if x.f.check != nil {
		return x.nextChecked(i, base)
	}
	var n int64
	x.place, n = packed(x.ivs, x.place)
	if n == 0 {
		return memory.NewBufferBytes(nil), nil, x.place, nil
	}
	buf, err := x.bodies.get(int(n))
	if err != nil {
		return nil, nil, nil, x.f.batchReadError(i, base, n, err)
	}
	for _, pl := range x.place {
		dst := buf[pl.at : pl.at+pl.end-pl.start]
		got, err := x.f.osf.ReadAt(dst, base+pl.start)
		if got < len(dst) {
			x.bodies.put(buf)
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, nil, nil, x.f.batchReadError(i, base+pl.start, int64(len(dst)), err)
		}
	}
	body, ref := x.bodies.newBody(buf)
	return body, ref, x.place, nil
}

// nextChecked reads batch i's intervals as whole sidecar chunks and checks
// each chunk (once per File) before the body goes to the decoder.
func (x *preadFetcher) nextChecked(i int, base int64) (*memory.Buffer, memory.Allocator, []placed, error) {
	c := x.f.check
	var n int64
	x.chunks, x.place, n = alignedPlan(x.ivs, base, c.chunkSize(), x.chunks, x.place)
	if n == 0 {
		return memory.NewBufferBytes(nil), nil, x.place, nil
	}
	buf, err := x.bodies.get(int(n))
	if err != nil {
		return nil, nil, nil, x.f.batchReadError(i, base, n, err)
	}
	for _, ch := range x.chunks {
		dst := buf[ch.at : ch.at+min(ch.hi, c.size)-ch.lo]
		got, err := x.f.osf.ReadAt(dst, ch.lo)
		if got < len(dst) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
		} else {
			err = c.verify(ch.lo, dst, true)
		}
		if err != nil {
			x.bodies.put(buf)
			return nil, nil, nil, x.f.batchReadError(i, ch.lo, int64(len(dst)), err)
		}
	}
	body, ref := x.bodies.newBody(buf)
	return body, ref, x.place, nil
}

func (x *preadFetcher) close() { x.bodies.close() }

// directRead is one batch read by the direct fetcher: done is closed when
// buf holds the batch's intervals (or err says why not).
type directRead struct {
	i     int
	buf   []byte
	place []placed
	err   error
	done  chan struct{}
}

// directFetcher reads each batch's intervals with O_DIRECT through the
// engine, as covering 4 KiB-aligned ranges straight into an aligned body
// (no copy: the body handed to arrow-go is the memory the device wrote).
// With read-ahead, a dispatcher goroutine keeps up to `ahead` batches
// being read (each by its own goroutine, so the engine sees their requests
// together) while the decoder works.
type directFetcher struct {
	f      *File
	p      *projection
	bodies *bodyPool
	ahead  int

	reads chan *directRead // in batch order; owned by the dispatcher (sender)
	slots chan struct{}    // one per batch being read or waiting for the decoder
	stop  chan struct{}
	wg    sync.WaitGroup // the dispatcher and read goroutines
}

func newDirectFetcher(f *File, p *projection) *directFetcher {
	x := &directFetcher{f: f, p: p, ahead: f.opts.Prefetch, bodies: newBodyPool(true, f.opts.Prefetch+2)}
	if x.ahead > 0 {
		x.reads = make(chan *directRead, x.ahead)
		x.slots = make(chan struct{}, x.ahead)
		x.stop = make(chan struct{})
		x.wg.Add(1)
		go x.dispatch()
	}
	return x
}

func (x *directFetcher) dispatch() {
	defer x.wg.Done()
	defer close(x.reads)
	for i := range x.f.batches {
		select {
		case x.slots <- struct{}{}:
		case <-x.stop:
			return
		}
		r := &directRead{i: i, done: make(chan struct{})}
		x.reads <- r // never blocks: at most `ahead` reads hold slots
		x.wg.Add(1)
		go func() {
			defer x.wg.Done()
			x.read(r)
			close(r.done)
		}()
	}
}

func (x *directFetcher) next(i int) (*memory.Buffer, memory.Allocator, []placed, error) {
	var r *directRead
	if x.ahead == 0 {
		r = &directRead{i: i}
		x.read(r)
	} else {
		r = <-x.reads
		<-r.done
		<-x.slots
		if r == nil || r.i != i {
			panic("arrowscan: direct read-ahead out of order") // a bug in this file, not bad input
		}
	}
	if r.err != nil {
		return nil, nil, nil, r.err
	}
	if r.buf == nil {
		return memory.NewBufferBytes(nil), nil, r.place, nil
	}
	body, ref := x.bodies.newBody(r.buf)
	return body, ref, r.place, nil
}

// chunk is an aligned file range [lo, hi) read into a body at at.
type chunk struct{ lo, hi, at int64 }

// alignedPlan places intervals (body offsets; the body starts at file
// offset base) in a buffer of whole align-sized file ranges: chunks are the
// covering aligned ranges (merged where they touch), one after another in
// the buffer, so each interval keeps its file offset modulo align. It
// returns the chunks, the placements and the buffer's length. hi may run
// past the end of the file (a read there is cut short).
func alignedPlan(ivs []interval, base, align int64, chunks []chunk, place []placed) ([]chunk, []placed, int64) {
	chunks, place = chunks[:0], place[:0]
	var total int64
	for _, iv := range ivs {
		lo, hi := (base+iv.start)&^(align-1), (base+iv.end+align-1)&^(align-1)
		if n := len(chunks); n > 0 && lo <= chunks[n-1].hi {
			c := &chunks[n-1]
			if hi > c.hi {
				total += hi - c.hi
				c.hi = hi
			}
		} else {
			chunks = append(chunks, chunk{lo, hi, total})
			total += hi - lo
		}
		c := chunks[len(chunks)-1]
		place = append(place, placed{iv.start, iv.end, c.at + base + iv.start - c.lo})
	}
	return chunks, place, total
}

// read reads batch r.i's intervals into a new aligned body.
func (x *directFetcher) read(r *directRead) {
	f := x.f
	base := f.footer.RecordBatches[r.i].BodyOffset()
	ivs := x.p.intervals(&f.batches[r.i], 0, nil)
	var chunks []chunk
	var total int64
	chunks, r.place, total = alignedPlan(ivs, base, directio.BlockSize, nil, nil)
	if total == 0 {
		return
	}
	buf, err := x.bodies.get(int(total))
	if err != nil {
		r.err = f.batchReadError(r.i, base, total, err)
		return
	}
	reqs := make([]ioengine.Request, 0, len(chunks))
	for _, c := range chunks {
		for off := c.lo; off < c.hi; off += maxRequest {
			n := min(c.hi-off, maxRequest)
			at := c.at + off - c.lo
			reqs = append(reqs, ioengine.Request{Op: ioengine.OpRead, File: f.ef, Off: off, Buf: buf[at : at+n : at+n]})
		}
	}
	_ = f.eng.Do(reqs)
	for k := range reqs {
		q := &reqs[k]
		if err := readResult(q, f.size); err != nil {
			x.bodies.put(buf)
			r.err = f.batchReadError(r.i, q.Off, int64(len(q.Buf)), err)
			return
		}
	}
	if c := f.check; c != nil {
		// Every read is the device's bytes: checked each time.
		for _, ch := range chunks {
			if err := c.verify(ch.lo, buf[ch.at:ch.at+min(ch.hi, c.size)-ch.lo], false); err != nil {
				x.bodies.put(buf)
				r.err = err
				return
			}
		}
	}
	r.buf = buf
}

func (x *directFetcher) close() {
	if x.ahead > 0 {
		close(x.stop)
		for r := range x.reads {
			<-r.done
			<-x.slots
			if r.buf != nil {
				x.bodies.put(r.buf)
			}
		}
		x.wg.Wait()
	}
	x.bodies.close()
}
