package sstable

import (
	"encoding/binary"
	"math/bits"
)

// A BlockNote is what a reader noted of a verified data block's layout,
// kept by a block cache beside the block's bytes (and forgotten when they
// are loaded again), so that the block can be prefetched: 0 is no note.
//
// A note is made for a block of Alignment bytes with one restart (at most
// restartInterval entries: values of a few hundred bytes). Bit k (0–63)
// says that cache line k (bytes 64k to 64k+63) holds part of an entry's
// header or key: the lines a lookup's walk may read, not the values it
// steps over. Line 0 always holds the first entry, so a note is never 0.
type BlockNote uint64

// lineSize is the cache line size a BlockNote counts in.
const lineSize = 64

// NoteBlock returns the note of data block i, verified (GetInBlock found it
// sound) and read into buf: 0 unless the block is Alignment bytes with one
// restart.
func (r *Reader) NoteBlock(i int, buf []byte) BlockNote {
	if i < 0 || i >= r.index.len() {
		return 0
	}
	return noteBlock(buf, int(r.index.used[i]))
}

// noteBlock is NoteBlock on the block alone, of used bytes: 0 unless it is
// Alignment bytes with one restart, or if its entries do not parse (the
// lookups that read that far report it).
func noteBlock(buf []byte, used int) BlockNote {
	if len(buf) != Alignment || used < 8 || used > Alignment-blockTrailerLen {
		return 0
	}
	if binary.LittleEndian.Uint32(buf[used-4:]) != 1 {
		return 0
	}
	data := buf[:used-8]
	var note BlockNote
	for p := 0; p < len(data); {
		start := p
		var v [3]uint64
		for i := range v {
			x, n := binary.Uvarint(data[p:])
			if n <= 0 {
				return 0
			}
			v[i], p = x, p+n
		}
		rest := uint64(len(data) - p)
		if v[1] > rest || v[2] > rest-v[1] {
			return 0
		}
		keyEnd := p + int(v[1])
		for l := start / lineSize; l <= (keyEnd-1)/lineSize; l++ {
			note |= 1 << l
		}
		p = keyEnd + int(v[2])
	}
	return note
}

// PrefetchBlock starts loading, into the CPU's cache, the memory a lookup
// in data block i (its bytes in buf, note kept with them or 0) reads: the
// line of the restart count, and the lines the note names (line 0 without
// a note). It waits for none of them (prefetch instructions, not loads):
// called for a block a little before the lookup in it, the loads overlap
// the lookups before. It checks nothing and touches nothing outside buf.
func (r *Reader) PrefetchBlock(i int, buf []byte, note BlockNote) {
	if i < 0 || i >= r.index.len() {
		return
	}
	prefetchBlock(buf, int(r.index.used[i]), note)
}

// prefetchBlock is PrefetchBlock on a block of used bytes.
func prefetchBlock(buf []byte, used int, note BlockNote) {
	if len(buf) != Alignment || used < 4 || used > Alignment-blockTrailerLen {
		return
	}
	prefetch(&buf[used-4])
	if note == 0 {
		note = 1
	}
	for b := uint64(note); b != 0; b &= b - 1 {
		prefetch(&buf[lineSize*bits.TrailingZeros64(b)&(Alignment-1)])
	}
}
