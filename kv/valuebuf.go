package kv

// ValueBuffer holds the values that MultiGets and ReadAheads copy out of
// the store for a caller that reads in rounds and is done with one round's
// values before the next (a stream processor's mini-batches): Reset makes
// its memory free for the next round's values, so a steady round allocates
// nothing for them. Without one (ReadOptions.Values nil) each call copies
// its values into memory of its own, which the caller keeps.
//
// The values a ValueBuffer holds, and the values and found slices of the
// MultiGets that named it, are valid until its Reset; after it their
// memory holds the next round's. A ValueBuffer belongs to one
// goroutine, like the calls that fill it; the zero value is ready to use.
type ValueBuffer struct {
	// chunks[:cur+1] hold values (chunks[cur] is being filled), each of
	// valueChunk bytes; a value longer than that gets memory of its own,
	// which Reset does not keep.
	chunks [][]byte
	cur    int
	// heads and founds back the values and found slices MultiGets return,
	// the unused part zeroed; they grow together, always of one length.
	heads  [][]byte
	founds []bool
}

// maxKeptChunks bounds the memory a ValueBuffer keeps across Reset: a
// round that needed more gives the rest back to the collector.
const maxKeptChunks = 64

// Reset makes every value the buffer holds invalid and its memory free for
// the next ones.
func (vb *ValueBuffer) Reset() {
	clear(vb.heads)
	clear(vb.founds)
	vb.heads, vb.founds = vb.heads[:0], vb.founds[:0]
	if cap(vb.heads) > maxKeptResults {
		vb.heads, vb.founds = nil, nil
	}
	if len(vb.chunks) == 0 {
		return
	}
	if poisonValues {
		for _, c := range vb.chunks[:vb.cur+1] {
			for i := range c {
				c[i] = 0xdb
			}
		}
	}
	for i := range vb.chunks[:vb.cur+1] {
		vb.chunks[i] = vb.chunks[i][:0]
	}
	if len(vb.chunks) > maxKeptChunks {
		clear(vb.chunks[maxKeptChunks:])
		vb.chunks = vb.chunks[:maxKeptChunks]
	}
	vb.cur = 0
}

// maxKeptResults bounds the keys whose results slices a ValueBuffer keeps
// across Reset.
const maxKeptResults = 1 << 16

// results returns a MultiGet's values and found slices for n keys, zeroed.
func (vb *ValueBuffer) results(n int) ([][]byte, []bool) {
	if cap(vb.heads)-len(vb.heads) < n {
		// The earlier calls' slices live on in what they returned.
		c := max(n, min(2*cap(vb.heads), maxKeptResults))
		vb.heads, vb.founds = make([][]byte, 0, c), make([]bool, 0, c)
	}
	h := len(vb.heads)
	vb.heads, vb.founds = vb.heads[:h+n], vb.founds[:h+n]
	return vb.heads[h : h+n : h+n], vb.founds[h : h+n : h+n]
}

// copy returns a copy of v in the buffer, its capacity ending with it.
func (vb *ValueBuffer) copy(v []byte) []byte {
	if len(v) > valueChunk {
		return append([]byte(nil), v...)
	}
	if len(vb.chunks) == 0 {
		vb.chunks = append(vb.chunks, make([]byte, 0, valueChunk))
	}
	c := vb.chunks[vb.cur]
	if cap(c)-len(c) < len(v) {
		if vb.cur++; vb.cur == len(vb.chunks) {
			vb.chunks = append(vb.chunks, make([]byte, 0, valueChunk))
		}
		c = vb.chunks[vb.cur]
	}
	n := len(c)
	c = append(c, v...)
	vb.chunks[vb.cur] = c
	return c[n : n+len(v) : n+len(v)]
}
