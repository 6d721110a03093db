package arrowscan

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"sort"
	"sync/atomic"

	"github.com/ringstore/ringstore/internal/crc32c"
)

// sidecarCheck checks the bytes a File reads against the chunk checksums
// of its sidecar (format 2), before anything decodes them:
//
//   - Open's reads (footer, schema, every block's metadata) and dictionary
//     batches go through checkedRanges, which widens each range to whole
//     chunks;
//   - mmap checks the chunks a batch's projected ranges cover, in the
//     mapping; pread reads whole chunks and checks them;
//   - direct checks every chunk of each O_DIRECT read (4 KiB-aligned, so
//     whole chunks: the chunk size divides 4096);
//   - pool checks the chunks a batch's projected ranges cover in each
//     frame, each once per load of the frame, just before the batch is
//     decoded (bufpool.Frame.CheckRange; a frame size is a multiple of
//     4096, so a frame is whole chunks).
//
// mmap, pread and Open's reads go through the page cache, whose bytes stay
// what they were when checked until the file is written: each chunk is
// checked once per open File (the bitmap done). direct and pool reads
// bring the device's bytes into memory of their own, which is checked on
// each read or load.
type sidecarCheck struct {
	path    string
	side    string   // path of the sidecar
	size    int64    // immutable: the file's size, as the sidecar says
	shift   uint     // immutable: log2 of the chunk size
	crcs    []uint32 // immutable: one per chunk
	entries []SidecarEntry
	starts  []int64 // immutable: entries' offsets, ascending (order of byStart)
	byStart []int   // immutable: entry indices in file order

	done []atomic.Uint64 // bit k%64 of word k/64: chunk k was checked (set once, never cleared)
}

// newSidecarCheck returns the check of the file at path against s, which
// must be format 2.
func newSidecarCheck(path string, s Sidecar) (*sidecarCheck, error) {
	side := path + SidecarSuffix
	if s.ChunkSize == 0 {
		return nil, fmt.Errorf("%w: checksum sidecar %s is format 1, which has no chunk checksums to check a scan's reads against: write it again (arrowscan.WriteSidecar, `ringstore gen events`) or skip the check (Options.SkipSidecarCheck, --no-sidecar-check)", ErrBadOptions, side)
	}
	c := &sidecarCheck{path: path, side: side, size: s.FileSize, shift: uint(bits.TrailingZeros(uint(s.ChunkSize))), crcs: s.Chunks, entries: s.Entries}
	c.done = make([]atomic.Uint64, (len(c.crcs)+63)/64)
	c.byStart = make([]int, len(s.Entries))
	for i := range c.byStart {
		c.byStart[i] = i
	}
	sort.Slice(c.byStart, func(a, b int) bool {
		return s.Entries[c.byStart[a]].Block.Offset < s.Entries[c.byStart[b]].Block.Offset
	})
	c.starts = make([]int64, len(c.byStart))
	for i, e := range c.byStart {
		c.starts[i] = s.Entries[e].Block.Offset
	}
	return c, nil
}

// loadSidecarCheck reads the sidecar of the file at path, if it has one
// (nil, nil if not), and checks that it describes a file of size bytes.
func loadSidecarCheck(path string, size int64) (*sidecarCheck, error) {
	side := path + SidecarSuffix
	raw, err := os.ReadFile(side)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("arrowscan: checksum sidecar: %w", err)
	}
	s, err := DecodeSidecar(raw, side)
	if err != nil {
		return nil, err
	}
	if s.FileSize != size {
		return nil, corrupt(path, "file", -1, "%d bytes, its checksum sidecar %s describes a file of %d bytes (a different or truncated file)", size, side, s.FileSize)
	}
	return newSidecarCheck(path, s)
}

func (c *sidecarCheck) chunkSize() int64 { return 1 << c.shift }

// span returns the chunk-aligned range covering [lo, hi), cut at the end
// of the file.
func (c *sidecarCheck) span(lo, hi int64) (int64, int64) {
	m := c.chunkSize() - 1
	return lo &^ m, min((hi+m)&^m, c.size)
}

// checkBlocks checks that the footer names the blocks the sidecar lists.
func (c *sidecarCheck) checkBlocks(ft *Footer) error {
	n := len(ft.Dictionaries) + len(ft.RecordBatches)
	if n != len(c.entries) {
		return corrupt(c.path, "footer", -1, "names %d blocks, its checksum sidecar %s %d", n, c.side, len(c.entries))
	}
	for i, e := range c.entries {
		b, k, kind := ft.Dictionaries, i, 0
		if i >= len(ft.Dictionaries) {
			b, k, kind = ft.RecordBatches, i-len(ft.Dictionaries), 1
		}
		if e.Kind != kind || e.Index != k || e.Block != b[k] {
			return corrupt(c.path, e.what(), e.Block.Offset, "the footer places it at offset %d (metadata %d, body %d), its checksum sidecar %s at %d (%d, %d)",
				b[k].Offset, b[k].MetaLen, b[k].BodyLen, c.side, e.Block.Offset, e.Block.MetaLen, e.Block.BodyLen)
		}
	}
	return nil
}

// partAt names the part of the file at off: the block that holds it, or
// the bytes outside every block.
func (c *sidecarCheck) partAt(off int64) string {
	i := sort.Search(len(c.starts), func(i int) bool { return c.starts[i] > off }) - 1
	if i >= 0 {
		if e := c.entries[c.byStart[i]]; off < e.Block.End() {
			return e.what()
		}
	}
	return "schema or footer"
}

// partsIn names the parts of the file the bytes [lo, hi) belong to: one,
// or the first and the last.
func (c *sidecarCheck) partsIn(lo, hi int64) string {
	first, last := c.partAt(lo), c.partAt(hi-1)
	if first == last {
		return first
	}
	return first + " to " + last
}

// verify checks data, the file's bytes [off, off+len(data)), where off is
// a chunk boundary; a range that ends inside a chunk, not at the end of the
// file, is an error (the file is shorter than when it was opened). With once,
// chunks checked before are skipped and those that pass are remembered.
func (c *sidecarCheck) verify(off int64, data []byte, once bool) error {
	cs := c.chunkSize()
	if off&(cs-1) != 0 || off < 0 || off+int64(len(data)) > c.size {
		panic(fmt.Sprintf("arrowscan: sidecar check of [%d, %d) does not start at a chunk of %d bytes in a file of %d", off, off+int64(len(data)), cs, c.size)) // a bug in this package
	}
	if end := off + int64(len(data)); end&(cs-1) != 0 && end != c.size {
		return corrupt(c.path, c.partAt(end), end&^(cs-1), "a read ended at offset %d, inside a chunk, in a file of %d bytes (truncated since Open?)", end, c.size)
	}
	for len(data) > 0 {
		k := off >> c.shift
		n := min(int64(len(data)), cs)
		word, bit := &c.done[k/64], uint64(1)<<(k%64)
		if !once || word.Load()&bit == 0 {
			if got := crc32c.Checksum(data[:n]); got != c.crcs[k] {
				return corrupt(c.path, c.partsIn(off, off+n), off, "checksum %#08x of the bytes %d..%d, its checksum sidecar says %#08x", got, off, off+n, c.crcs[k])
			}
			if once {
				word.Or(bit)
			}
		}
		off, data = off+n, data[n:]
	}
	return nil
}

// verifyFile checks every chunk of the open file f.
func (c *sidecarCheck) verifyFile(f *os.File) error {
	buf := make([]byte, 256*c.chunkSize())
	for off := int64(0); off < c.size; {
		n := min(int64(len(buf)), c.size-off)
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			if errors.Is(err, io.EOF) {
				return corrupt(c.path, "file", off, "ends before offset %d", c.size)
			}
			return &ReadError{Path: c.path, Part: "file", Offset: off, Len: n, Err: err}
		}
		if err := c.verify(off, buf[:n], false); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// checkedRanges reads through r and checks what it read against c: each
// range is read widened to whole chunks.
type checkedRanges struct {
	r rangeReader
	c *sidecarCheck
}

func (x checkedRanges) readRanges(rs []fileRange) ([][]byte, int, error) {
	wide := make([]fileRange, len(rs))
	for i, r := range rs {
		if r.off < 0 || r.len < 0 || r.off > x.c.size || r.len > x.c.size-r.off {
			return nil, i, io.ErrUnexpectedEOF // as every rangeReader says it
		}
		lo, hi := x.c.span(r.off, r.end())
		wide[i] = fileRange{lo, hi - lo}
	}
	bufs, bad, err := x.r.readRanges(wide)
	if err != nil {
		return nil, bad, err
	}
	for i, r := range rs {
		if err := x.c.verify(wide[i].off, bufs[i], true); err != nil {
			return nil, i, err
		}
		lo, hi := r.off-wide[i].off, r.end()-wide[i].off
		bufs[i] = bufs[i][lo:hi:hi]
	}
	return bufs, 0, nil
}
