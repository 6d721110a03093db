package kv

import (
	"fmt"
	"io"

	"github.com/ringstore/ringstore/kv/sstable"
)

// compactionChunk is how many bytes of consecutive data blocks a
// compaction input reads at a time.
const compactionChunk = 256 << 10

// compactionInput walks one input table of a compaction from its first
// entry, reading its data blocks in chunks of consecutive blocks with the
// table's own descriptor (O_DIRECT unless Options.BufferedIO) on the
// store's engine. It neither fills the block cache nor the page cache, and
// needs no second open of the table: the table's reader holds the index.
// Every block is checked (sstable.DecodeBlock) as it is reached.
type compactionInput struct {
	db    *DB
	t     *table
	blk   int    // the block after the one being walked
	chunk []byte // aligned; blocks [first, end) of the last read
	first int
	end   int
	base  uint64 // file offset of chunk[0]
	it    *sstable.BlockIter
	e     error
}

func newCompactionInput(db *DB, t *table) *compactionInput {
	return &compactionInput{db: db, t: t}
}

// fill reads the chunk of blocks starting at block i: as many whole blocks
// as fit in compactionChunk (at least one).
func (c *compactionInput) fill(i int) error {
	r := c.t.r
	h := r.Block(i)
	end := i + 1
	for end < r.NumBlocks() {
		nh := r.Block(end)
		if nh.Offset+nh.Len-h.Offset > compactionChunk {
			break
		}
		end++
	}
	last := r.Block(end - 1)
	n := int(last.Offset + last.Len - h.Offset)
	if cap(c.chunk) < n {
		c.chunk = alignedBuf(max(n, compactionChunk))
	}
	buf := c.chunk[:n]
	got, err := c.db.eng.ReadAt(c.t.fd, buf, int64(h.Offset))
	// Not counted in Stats.BlockReads, which is what lookups read;
	// Stats.CompactedIn counts the inputs.
	if err != nil || got != n {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF // the table is shorter than its index says
		}
		return fmt.Errorf("kv: compaction: reading %s at offset %d (%d bytes): read %d: %w", c.t.path, h.Offset, n, got, err)
	}
	c.chunk, c.first, c.end, c.base = buf, i, end, h.Offset
	return nil
}

// load decodes block i, reading its chunk first when needed.
func (c *compactionInput) load(i int) bool {
	c.it = nil
	if i >= c.t.r.NumBlocks() {
		return false
	}
	if i < c.first || i >= c.end {
		if c.e = c.fill(i); c.e != nil {
			return false
		}
	}
	h := c.t.r.Block(i)
	b, err := c.t.r.DecodeBlock(h, c.chunk[h.Offset-c.base:h.Offset-c.base+h.Len])
	if err != nil {
		c.e = fmt.Errorf("kv: %w", err)
		return false
	}
	c.blk = i + 1
	c.it = b.Iter()
	return true
}

func (c *compactionInput) seekGE(key []byte) bool {
	if key != nil {
		panic("kv: a compaction input supports only a walk from the start")
	}
	c.e, c.first, c.end, c.chunk = nil, 0, 0, c.chunk[:0]
	return c.load(0) && c.next()
}

// next moves to the next entry, reading on into the next blocks.
func (c *compactionInput) next() bool {
	for c.it != nil {
		if c.it.Next() {
			return true
		}
		if !c.load(c.blk) {
			return false
		}
	}
	return false
}

func (c *compactionInput) key() sstable.InternalKey { return c.it.Key() }
func (c *compactionInput) value() []byte            { return c.it.Value() }
func (c *compactionInput) err() error               { return c.e }
