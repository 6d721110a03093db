package arrowscan

import (
	"errors"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ringstore/ringstore/bufpool"
)

// poolZeroCopy lets a batch be decoded straight from pool memory when its
// projected ranges all lie in one frame, or in frames the pool shows as
// one range (bufpool.Pool.Window); the frames stay pinned until arrow-go
// releases the body. Tests and benchmarks turn it off to compare.
var poolZeroCopy = true

// poolWindows says whether the fetcher asks pool for windows of several
// frames. Tests make it say yes for a pool without windows, so that every
// such batch takes the fallback from a refused window to a copy.
var poolWindows = func(pool *bufpool.Pool) bool { return pool.Options().Windows }

// poolGap: intervals closer than this are copied out as one.
const poolGap = 4096

// poolFetcher reads through the shared bufpool.Pool on the decoder's
// goroutine: before batch i is pinned, the spans of batches up to
// i+ahead are handed to Pool.Prefetch, so the pool's I/O goroutines load
// them while this goroutine decodes. A batch's spans are pinned in one Pin
// call when they fit in a quarter of the pool (otherwise in groups that
// do), copied into a contiguous body, and unpinned at once. When all of a
// batch's ranges lie in one frame, the body is the frame's memory itself
// and the frame is unpinned when arrow-go releases it.
type poolFetcher struct {
	f          *File
	p          *projection
	pool       *bufpool.Pool
	id         bufpool.FileID
	bodies     *bodyPool
	ahead      int
	prefetched int   // highest batch handed to Prefetch
	met        int   // batches below this were pinned, or retracted by close
	frameSize  int64 // immutable
	maxPin     int64 // most frames one Pin call may need
	windows    bool  // immutable: the pool has windows (bufpool.Options.Windows)

	ivs    []interval
	place  []placed
	spans  []bufpool.Span
	frames []*bufpool.Frame
}

func newPoolFetcher(f *File, p *projection) *poolFetcher {
	pool := f.opts.Pool
	x := &poolFetcher{
		f: f, p: p, pool: pool, id: f.poolID,
		bodies:     newBodyPool(false, 2),
		ahead:      f.opts.Prefetch,
		prefetched: -1,
		frameSize:  int64(pool.FrameSize()),
		maxPin:     max(1, int64(pool.Frames())/4),
		windows:    poolWindows(pool),
	}
	// Tell the pool every batch this scan will pin, batch by batch as next
	// pins them, so that frames other scans load stay until this one has
	// been through them (bufpool.Pool.Announce).
	for j := range f.batches {
		x.ivs, x.spans = x.batchSpans(j, x.spans)
		pool.Announce(x.spans)
	}
	return x
}

// batchSpans returns batch i's intervals as pool spans (file offsets).
func (x *poolFetcher) batchSpans(i int, dst []bufpool.Span) ([]interval, []bufpool.Span) {
	base := x.f.footer.RecordBatches[i].BodyOffset()
	ivs := x.p.intervals(&x.f.batches[i], poolGap, x.ivs)
	dst = dst[:0]
	for _, iv := range ivs {
		dst = append(dst, bufpool.Span{File: x.id, Off: base + iv.start, Len: iv.end - iv.start})
	}
	return ivs, dst
}

func (x *poolFetcher) next(i int) (*memory.Buffer, memory.Allocator, []placed, error) {
	last := min(i+x.ahead, len(x.f.batches)-1)
	for j := max(x.prefetched+1, i+1); j <= last; j++ {
		x.ivs, x.spans = x.batchSpans(j, x.spans)
		x.pool.Prefetch(x.spans)
		x.prefetched = j
	}
	x.ivs, x.spans = x.batchSpans(i, x.spans)
	ivs, spans := x.ivs, x.spans
	x.met = i + 1 // the Pin below meets batch i's announcement
	if len(spans) == 0 {
		x.place = x.place[:0]
		return memory.NewBufferBytes(nil), nil, x.place, nil
	}
	lo, hi := spans[0].Off, spans[len(spans)-1].Off+spans[len(spans)-1].Len
	if poolZeroCopy && (lo/x.frameSize == (hi-1)/x.frameSize || x.windows && x.frameCount(spans) <= x.maxPin) {
		body, ref, place, err := x.zeroCopy(i, ivs, spans, lo, hi)
		if !errors.Is(err, bufpool.ErrNotWindowed) {
			return body, ref, place, err
		}
	}
	var n int64
	x.place, n = packed(ivs, x.place)
	buf, err := x.bodies.get(int(n))
	if err != nil {
		return nil, nil, nil, x.f.batchReadError(i, lo, n, err)
	}
	if err := x.copyOut(spans, buf, x.place); err != nil {
		x.bodies.put(buf)
		return nil, nil, nil, x.f.batchReadError(i, lo, hi-lo, err)
	}
	body, ref := x.bodies.newBody(buf)
	return body, ref, x.place, nil
}

// copyOut pins the spans in groups of at most maxPin frames, copies each
// span to its place in buf, and unpins.
func (x *poolFetcher) copyOut(spans []bufpool.Span, buf []byte, place []placed) error {
	type piece struct {
		span bufpool.Span
		dst  []byte
	}
	var group []bufpool.Span
	var pieces []piece
	var frames int64
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		var err error
		x.frames, err = x.pool.Pin(group, x.frames[:0])
		if err != nil {
			return err
		}
		err = x.checkSpans(group, x.frames)
		for _, pc := range pieces {
			if err != nil {
				break
			}
			if err = bufpool.CopyOut(pc.dst, x.frames, pc.span.Off); err != nil {
				break
			}
		}
		for _, fr := range x.frames {
			fr.Unpin()
		}
		group, pieces, frames = group[:0], pieces[:0], 0
		return err
	}
	for k, s := range spans {
		dst := buf[place[k].at : place[k].at+s.Len]
		for s.Len > 0 {
			// Split at a frame boundary when the rest does not fit the group.
			room := x.maxPin - frames
			if room <= 0 {
				if err := flush(); err != nil {
					return err
				}
				room = x.maxPin
			}
			first := s.Off / x.frameSize
			limit := (first+room)*x.frameSize - s.Off // bytes up to the room's end
			n := min(s.Len, limit)
			part := bufpool.Span{File: s.File, Off: s.Off, Len: n}
			group = append(group, part)
			pieces = append(pieces, piece{part, dst[:n]})
			frames += (s.Off+n-1)/x.frameSize - first + 1
			s.Off, s.Len, dst = s.Off+n, s.Len-n, dst[n:]
		}
	}
	return flush()
}

// frameCount is how many frames spans cover, counting a frame shared by
// two spans twice.
func (x *poolFetcher) frameCount(spans []bufpool.Span) int64 {
	var n int64
	for _, s := range spans {
		n += (s.Off+s.Len-1)/x.frameSize - s.Off/x.frameSize + 1
	}
	return n
}

// zeroCopy makes the body of a batch from the pool's memory: [lo, hi) of
// its one frame, or of the file's window, pinned until arrow-go releases
// the body. Where the pool cannot show the frames as one range it returns
// an error wrapping bufpool.ErrNotWindowed, with nothing pinned, and the
// caller copies instead.
func (x *poolFetcher) zeroCopy(i int, ivs []interval, spans []bufpool.Span, lo, hi int64) (*memory.Buffer, memory.Allocator, []placed, error) {
	frames, err := x.pool.Pin(spans, nil)
	if err != nil {
		return nil, nil, nil, x.f.batchReadError(i, lo, hi-lo, err)
	}
	var data []byte
	err = x.checkSpans(spans, frames)
	switch fr := frames[0]; { // fr covers lo
	case err != nil:
	case hi <= fr.Offset()+int64(fr.Len()):
		data = fr.Bytes()[lo-fr.Offset():]
	case lo/x.frameSize == (hi-1)/x.frameSize:
		err = errFrameShort
	default:
		data, err = x.pool.Window(x.id, lo, hi-lo, frames)
	}
	if err != nil {
		for _, f := range frames {
			f.Unpin()
		}
		if errors.Is(err, bufpool.ErrNotWindowed) {
			return nil, nil, nil, err
		}
		return nil, nil, nil, x.f.batchReadError(i, lo, hi-lo, err)
	}
	data = data[: hi-lo : hi-lo]
	base := x.f.footer.RecordBatches[i].BodyOffset()
	x.place = x.place[:0]
	for _, iv := range ivs {
		x.place = append(x.place, placed{iv.start, iv.end, base + iv.start - lo})
	}
	pf := &pinnedFrames{frames: frames}
	return memory.NewBufferWithAllocator(data, pf), pf, x.place, nil
}

// checkSpans checks the bytes of spans, which lie in the pinned frames,
// against the file's sidecar, if it has one: in each frame only the chunks
// the spans cover, each once per load of the frame (bufpool.Frame.
// CheckRange; a frame size is a multiple of 4096, so of the chunk size).
// A batch's projected ranges are checked just before they are decoded,
// and a frame's other columns when a scan that projects them pins it.
func (x *poolFetcher) checkSpans(spans []bufpool.Span, frames []*bufpool.Frame) error {
	c := x.f.check
	if c == nil {
		return nil
	}
	for _, s := range spans {
		for _, fr := range frames {
			lo, hi := max(s.Off, fr.Offset()), min(s.Off+s.Len, fr.Offset()+int64(fr.Len()))
			if lo >= hi {
				continue
			}
			base := fr.Offset()
			if err := fr.CheckRange(int(lo-base), int(hi-lo), func(off int, b []byte) error {
				return c.verify(base+int64(off), b, false)
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// close retracts the announcements of the batches the scan did not reach.
func (x *poolFetcher) close() {
	for ; x.met < len(x.f.batches); x.met++ {
		x.ivs, x.spans = x.batchSpans(x.met, x.spans)
		x.pool.Retract(x.spans)
	}
	x.bodies.close()
}

// pinnedFrames is the allocator of a zero-copy body: arrow-go's release of
// the body's last reference unpins the frames it lies in.
type pinnedFrames struct {
	frames []*bufpool.Frame
	freed  atomic.Bool
}

func (p *pinnedFrames) Allocate(size int) []byte { return make([]byte, size) }
func (p *pinnedFrames) Reallocate(size int, b []byte) []byte {
	nb := make([]byte, size)
	copy(nb, b)
	return nb
}
func (p *pinnedFrames) Free([]byte) {
	if !p.freed.Swap(true) {
		for _, f := range p.frames {
			f.Unpin()
		}
	}
}
