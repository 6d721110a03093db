package arrowscan

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"

	flatbuffers "github.com/google/flatbuffers/go"
)

// projection is what one Scan reads: the chosen top-level fields in output
// order, the dictionary batches they need, and the schema message that
// describes them. Immutable.
type projection struct {
	cols     []int
	dicts    []*dictEntry // footer order
	schemaFB []byte       // Schema message flatbuffer (see schemaMessage)
}

// ColumnError is a Scan of a column the file does not have (or has twice).
type ColumnError struct {
	Path   string
	Column string
	Detail string
}

func (e *ColumnError) Error() string {
	return fmt.Sprintf("arrowscan: %s: column %q %s", e.Path, e.Column, e.Detail)
}

func (e *ColumnError) Unwrap() error { return ErrUnknownColumn }

// project resolves column names (nil or empty: every field).
func (f *File) project(columns []string) (*projection, error) {
	p := &projection{}
	if len(columns) == 0 {
		p.cols = make([]int, len(f.footer.schema.fields))
		for i := range p.cols {
			p.cols[i] = i
		}
	} else {
		seen := make(map[string]bool, len(columns))
		for _, name := range columns {
			i, ok := f.byName[name]
			switch {
			case !ok:
				return nil, &ColumnError{Path: f.path, Column: name, Detail: fmt.Sprintf("not in the schema (fields: %s)", fieldNames(f))}
			case i < 0:
				return nil, &ColumnError{Path: f.path, Column: name, Detail: "is ambiguous: the schema has two fields of that name"}
			case seen[name]:
				return nil, fmt.Errorf("%w: %s: column %q asked for twice", ErrBadOptions, f.path, name)
			}
			seen[name] = true
			p.cols = append(p.cols, i)
		}
	}
	ids := make(map[int64]bool)
	for _, c := range p.cols {
		for _, id := range f.footer.schema.fields[c].dictIDs {
			ids[id] = true
		}
	}
	for _, d := range f.dicts {
		if ids[d.meta.id] {
			p.dicts = append(p.dicts, d)
		}
	}
	p.schemaFB = schemaMessage(f.footer, f.footer.Version, p.cols)
	return p, nil
}

func fieldNames(f *File) string {
	s := ""
	for i, fld := range f.schema.Fields() {
		if i > 0 {
			s += ", "
		}
		if i == 8 {
			return s + fmt.Sprintf("... %d in all", f.schema.NumFields())
		}
		s += fld.Name
	}
	return s
}

// interval is a byte range [start, end) of a record batch body.
type interval struct{ start, end int64 }

// intervals returns the merged byte ranges of the body that hold the
// projected fields' buffers, sorted; ranges closer than gap bytes are
// merged into one (reading a small gap costs less than another read).
// Buffers of one field need not be contiguous, nor fields in order; empty
// buffers take no range.
func (p *projection) intervals(bm *batchMeta, gap int64, dst []interval) []interval {
	dst = dst[:0]
	for _, c := range p.cols {
		s := bm.fields[c]
		for _, b := range bm.buffers[s.buf0 : s.buf0+s.bufs] {
			if b.length > 0 {
				dst = append(dst, interval{b.offset, b.offset + b.length})
			}
		}
	}
	if len(dst) <= 1 {
		return dst
	}
	slices.SortFunc(dst, func(a, b interval) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
	out := dst[:1]
	for _, iv := range dst[1:] {
		last := &out[len(out)-1]
		if iv.start <= last.end+gap {
			last.end = max(last.end, iv.end)
		} else {
			out = append(out, iv)
		}
	}
	return out
}

// placed says where an interval of the original body lies in the new
// body: bytes [start, end) of the original are at [at, at+end-start).
type placed struct{ start, end, at int64 }

// packed places intervals one after another, each at a position congruent
// to its original offset modulo 64 so buffers keep their alignment, and
// returns the placements and the new body length.
func packed(ivs []interval, dst []placed) ([]placed, int64) {
	dst = dst[:0]
	var pos int64
	for _, iv := range ivs {
		at := pos + ((iv.start-pos)%64+64)%64
		dst = append(dst, placed{iv.start, iv.end, at})
		pos = at + iv.end - iv.start
	}
	return dst, pos
}

// remap returns the new body offset of original body offset off (inside
// one of the placements, sorted by start).
func remap(place []placed, off int64) int64 {
	k := sort.Search(len(place), func(i int) bool { return place[i].end > off })
	return place[k].at + off - place[k].start
}

// Bounds on what a compressed buffer may claim as its uncompressed size
// (the int64 before the compressed bytes). arrow-go allocates that much
// before it decompresses, so a corrupt size would exhaust memory (the
// runtime's out-of-memory is fatal, not a panic). A buffer may claim at
// most what its codec can expand its stored bytes to, never more than
// maxVarBuffer, and, where the layout fixes its size from the node's
// length (bitmaps, offsets, fixed-width values), that size rounded up to
// 64 bytes, plus 64.
const (
	maxVarBuffer = 1 << 30
	lz4MaxRatio  = 256   // LZ4: a match byte can stand for at most ~255 bytes
	zstdMaxRatio = 32768 // zstd: an RLE block of 128 KiB takes 4 bytes
)

func uncompressedLimit(codec int8, stored, need int64) int64 {
	ratio := int64(zstdMaxRatio)
	if codec == 0 {
		ratio = lz4MaxRatio
	}
	limit := int64(maxVarBuffer)
	if stored <= maxVarBuffer/ratio {
		limit = min(limit, stored*ratio+(128<<10))
	}
	if need != varLen && need <= maxVarBuffer {
		// need comes from the node's length, itself unchecked: it only ever
		// lowers the codec's bound.
		limit = min(limit, (need+63)&^63+64)
	}
	return limit
}

// checkCompressed checks the uncompressed size of every projected buffer
// of a compressed batch against uncompressedLimit, in the new body.
func (p *projection) checkCompressed(f *File, i int, body []byte, place []placed) error {
	bm := &f.batches[i]
	if bm.codec == noCodec {
		return nil
	}
	for _, c := range p.cols {
		s := bm.fields[c]
		for j := s.buf0; j < s.buf0+s.bufs; j++ {
			br := bm.buffers[j]
			if br.length == 0 {
				continue
			}
			at := remap(place, br.offset)
			n := int64(binary.LittleEndian.Uint64(body[at:]))
			if n == -1 {
				continue // stored uncompressed
			}
			if limit := uncompressedLimit(bm.codec, br.length-8, bm.bufNeed[j]); n < 0 || n > limit {
				blk := f.footer.RecordBatches[i]
				return corrupt(f.path, fmt.Sprintf("record batch %d", i), blk.BodyOffset()+br.offset,
					"compressed buffer %d (column %q) claims %d bytes uncompressed; at most %d fit", j, f.schema.Field(c).Name, n, limit)
			}
		}
	}
	return nil
}

// checkDictCompressed is checkCompressed for a dictionary batch, whose
// layout is not worked out: every buffer gets the codec's bound.
func checkDictCompressed(f *File, d *dictEntry) error {
	dm := &d.meta.data
	if dm.codec == noCodec {
		return nil
	}
	for j, br := range dm.buffers {
		if br.length == 0 {
			continue
		}
		n := int64(binary.LittleEndian.Uint64(d.body[br.offset:]))
		if limit := uncompressedLimit(dm.codec, br.length-8, varLen); n != -1 && (n < 0 || n > limit) {
			return corrupt(f.path, fmt.Sprintf("dictionary batch %d", d.index), d.block.BodyOffset()+br.offset,
				"compressed buffer %d claims %d bytes uncompressed; at most %d fit", j, n, limit)
		}
	}
	return nil
}

// batchMessage builds the projected RecordBatch message of bm: only the
// projected fields' nodes, buffers and variadic counts, in output order,
// buffer offsets remapped into the new body of bodyLen bytes; same row
// count, compression, version and custom metadata.
func (p *projection) batchMessage(b *flatbuffers.Builder, bm *batchMeta, place []placed, bodyLen int64) []byte {
	b.Reset()
	var kvs flatbuffers.UOffsetT
	if len(bm.custom) > 0 {
		offs := make([]flatbuffers.UOffsetT, len(bm.custom))
		for i, kv := range bm.custom {
			k, v := b.CreateString(kv.key), b.CreateString(kv.value)
			b.StartObject(2)
			b.PrependUOffsetTSlot(0, k, 0)
			b.PrependUOffsetTSlot(1, v, 0)
			offs[i] = b.EndObject()
		}
		b.StartVector(4, len(offs), 4)
		for i := len(offs) - 1; i >= 0; i-- {
			b.PrependUOffsetT(offs[i])
		}
		kvs = b.EndVector(len(offs))
	}

	nNodes, nBufs, nVars := 0, 0, 0
	for _, c := range p.cols {
		s := bm.fields[c]
		nNodes += s.nodes
		nBufs += s.bufs
		nVars += s.vars
	}
	// Vectors are built back to front.
	b.StartVector(16, nBufs, 8)
	for ci := len(p.cols) - 1; ci >= 0; ci-- {
		s := bm.fields[p.cols[ci]]
		for j := s.buf0 + s.bufs - 1; j >= s.buf0; j-- {
			br := bm.buffers[j]
			off := int64(0)
			if br.length > 0 {
				off = remap(place, br.offset)
			}
			b.Prep(8, 16)
			b.PrependInt64(br.length)
			b.PrependInt64(off)
		}
	}
	bufs := b.EndVector(nBufs)
	b.StartVector(16, nNodes, 8)
	for ci := len(p.cols) - 1; ci >= 0; ci-- {
		s := bm.fields[p.cols[ci]]
		for j := s.node0 + s.nodes - 1; j >= s.node0; j-- {
			n := bm.nodes[j]
			b.Prep(8, 16)
			b.PrependInt64(n.nullCount)
			b.PrependInt64(n.length)
		}
	}
	nodes := b.EndVector(nNodes)
	var vars flatbuffers.UOffsetT
	if nVars > 0 {
		b.StartVector(8, nVars, 8)
		for ci := len(p.cols) - 1; ci >= 0; ci-- {
			s := bm.fields[p.cols[ci]]
			for j := s.var0 + s.vars - 1; j >= s.var0; j-- {
				b.PrependInt64(bm.variadic[j])
			}
		}
		vars = b.EndVector(nVars)
	}
	var comp flatbuffers.UOffsetT
	if bm.codec != noCodec {
		b.StartObject(2)
		b.PrependInt8Slot(0, bm.codec, -1) // written even when 0 (LZ4_FRAME)
		b.PrependInt8Slot(1, 0, -1)        // BUFFER
		comp = b.EndObject()
	}

	b.StartObject(5) // RecordBatch
	b.PrependInt64Slot(0, bm.length, -1)
	b.PrependUOffsetTSlot(1, nodes, 0)
	b.PrependUOffsetTSlot(2, bufs, 0)
	if comp != 0 {
		b.PrependUOffsetTSlot(3, comp, 0)
	}
	if vars != 0 {
		b.PrependUOffsetTSlot(4, vars, 0)
	}
	rb := b.EndObject()

	b.StartObject(5) // Message
	b.PrependInt16Slot(0, bm.version, -1)
	b.PrependByteSlot(1, headerRecordBatch, 0)
	b.PrependUOffsetTSlot(2, rb, 0)
	b.PrependInt64Slot(3, bodyLen, -1)
	if kvs != 0 {
		b.PrependUOffsetTSlot(4, kvs, 0)
	}
	b.Finish(b.EndObject())
	return slices.Clone(b.FinishedBytes())
}
