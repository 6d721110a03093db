package arrowscan

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// fileRange is a byte range of a file.
type fileRange struct{ off, len int64 }

func (r fileRange) end() int64 { return r.off + r.len }

// rangeReader reads whole byte ranges of one file into fresh heap memory.
// Open uses it for the footer, every block's metadata and dictionaries.
type rangeReader interface {
	// readRanges reads every range in full; on failure it returns the
	// index of the range that failed and the cause.
	readRanges(rs []fileRange) ([][]byte, int, error)
}

// readerAt adapts a rangeReader to io.ReaderAt for ParseFooter.
type readerAt struct{ r rangeReader }

func (a readerAt) ReadAt(p []byte, off int64) (int, error) {
	bufs, _, err := a.r.readRanges([]fileRange{{off, int64(len(p))}})
	if err != nil {
		return 0, err
	}
	return copy(p, bufs[0]), nil
}

// bytesRanges reads from memory (the mapping of ModeMmap).
type bytesRanges []byte

func (b bytesRanges) readRanges(rs []fileRange) ([][]byte, int, error) {
	out := make([][]byte, len(rs))
	for i, r := range rs {
		if r.off < 0 || r.len < 0 || r.off > int64(len(b)) || r.len > int64(len(b))-r.off {
			return nil, i, io.ErrUnexpectedEOF
		}
		out[i] = b[r.off:r.end():r.end()]
	}
	return out, 0, nil
}

// preadRanges reads with pread through the page cache.
type preadRanges struct{ f *os.File }

func (p preadRanges) readRanges(rs []fileRange) ([][]byte, int, error) {
	out := make([][]byte, len(rs))
	for i, r := range rs {
		b := make([]byte, r.len)
		n, err := p.f.ReadAt(b, r.off)
		if n < len(b) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, i, err
		}
		out[i] = b
	}
	return out, 0, nil
}

// directRanges reads with O_DIRECT through an engine: each range as the
// covering 4 KiB-aligned range into aligned memory, then copied out.
type directRanges struct {
	file *ioengine.File
	eng  *ioengine.Engine
}

// maxRequest is the largest single read handed to the engine; longer
// ranges are split, so the device sees several requests in flight.
const maxRequest = 1 << 20

func alignDown(x int64) int64 { return x &^ (directio.BlockSize - 1) }
func alignUp(x int64) int64   { return (x + directio.BlockSize - 1) &^ (directio.BlockSize - 1) }

func (d directRanges) readRanges(rs []fileRange) ([][]byte, int, error) {
	out := make([][]byte, len(rs))
	// Groups of ranges share one aligned buffer and one engine call.
	const groupBytes = 8 << 20
	for start := 0; start < len(rs); {
		end, total := start, int64(0)
		for end < len(rs) && (end == start || total+alignUp(rs[end].end())-alignDown(rs[end].off) <= groupBytes) {
			total += alignUp(rs[end].end()) - alignDown(rs[end].off)
			end++
		}
		if total == 0 {
			for i := start; i < end; i++ {
				out[i] = []byte{}
			}
			start = end
			continue
		}
		if i, err := d.readGroup(rs[start:end], out[start:end], total); err != nil {
			return nil, start + i, err
		}
		start = end
	}
	return out, 0, nil
}

func (d directRanges) readGroup(rs []fileRange, out [][]byte, total int64) (int, error) {
	buf, err := directio.Alloc(int(total))
	if err != nil {
		return 0, err
	}
	defer directio.Free(buf)
	var reqs []ioengine.Request
	var owner []int // range index of each request
	at := int64(0)
	slots := make([]int64, len(rs))
	for i, r := range rs {
		lo, hi := alignDown(r.off), alignUp(r.end())
		slots[i] = at + (r.off - lo)
		for off := lo; off < hi; off += maxRequest {
			n := min(hi-off, maxRequest)
			reqs = append(reqs, ioengine.Request{Op: ioengine.OpRead, File: d.file, Off: off, Buf: buf[at : at+n : at+n]})
			owner = append(owner, i)
			at += n
		}
	}
	_ = d.eng.Do(reqs)
	for k := range reqs {
		q := &reqs[k]
		if err := readResult(q, rs[owner[k]].end()); err != nil {
			return owner[k], err
		}
	}
	for i, r := range rs {
		out[i] = make([]byte, r.len)
		copy(out[i], buf[slots[i]:slots[i]+r.len])
	}
	return 0, nil
}

// readResult checks one finished read: complete, or cut short by the end
// of the file after every byte up to need (an aligned read may run past the
// file's last byte).
func readResult(q *ioengine.Request, need int64) error {
	switch {
	case q.Err == nil:
		return nil
	case errors.Is(q.Err, io.EOF):
		if q.Off+int64(q.N) >= min(need, q.Off+int64(len(q.Buf))) {
			return nil
		}
		return fmt.Errorf("short read: %d of %d bytes at offset %d (file truncated?): %w", q.N, len(q.Buf), q.Off, io.ErrUnexpectedEOF)
	}
	return q.Err
}
