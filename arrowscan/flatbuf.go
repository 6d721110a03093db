package arrowscan

import (
	"encoding/binary"
	"fmt"
	"math"
)

// A small flatbuffer reader that checks every offset against the buffer
// before it follows it. arrow-go's generated readers trust their input and
// panic (or read garbage) on a bad offset; this one returns an *fbError
// naming the position and the field.
//
// Flatbuffer layout, as far as it is used here:
//
//	root:    uoffset (u32) at 0 → table
//	table:   soffset (i32) at pos; vtable = pos - soffset
//	vtable:  u16 vtable bytes, u16 table inline bytes, u16 field offsets...
//	         (field i at vtable+4+2i; 0 or beyond the vtable = absent)
//	field:   scalar inline at pos+off, or a u32 uoffset at pos+off
//	         pointing forward to a table, vector or string
//	vector:  u32 count, then count elements (structs inline, tables and
//	         strings as uoffsets relative to the element's own position)
//	string:  u32 length, bytes, NUL

// fbError is a malformed flatbuffer: Pos is the byte position within the
// flatbuffer where the bad value was found.
type fbError struct {
	Pos  int64
	What string
}

func (e *fbError) Error() string { return e.What }

func fbErr(pos int64, format string, args ...any) error {
	return &fbError{Pos: pos, What: fmt.Sprintf(format, args...)}
}

// fbTable is a checked table: its vtable and inline bytes lie inside buf.
type fbTable struct {
	buf    []byte
	pos    int64 // table start
	vt     int64 // vtable start
	vtLen  int64 // vtable length in bytes
	tblLen int64 // table inline length in bytes
}

// fbRoot returns the root table of buf.
func fbRoot(buf []byte, what string) (fbTable, error) {
	if len(buf) < 4 {
		return fbTable{}, fbErr(0, "%s: flatbuffer of %d bytes is too short for a root offset", what, len(buf))
	}
	return fbTableAt(buf, int64(binary.LittleEndian.Uint32(buf)), 0, what)
}

// fbTableAt checks the table at pos, which the offset at from points to.
func fbTableAt(buf []byte, pos, from int64, what string) (fbTable, error) {
	n := int64(len(buf))
	if pos < 0 || pos > n-4 {
		return fbTable{}, fbErr(from, "%s: offset at %d points to a table at %d, outside flatbuffer of %d bytes", what, from, pos, n)
	}
	vt := pos - int64(int32(binary.LittleEndian.Uint32(buf[pos:])))
	if vt < 0 || vt > n-4 {
		return fbTable{}, fbErr(pos, "%s: vtable at %d of table at %d outside flatbuffer of %d bytes", what, vt, pos, n)
	}
	vtLen := int64(binary.LittleEndian.Uint16(buf[vt:]))
	tblLen := int64(binary.LittleEndian.Uint16(buf[vt+2:]))
	switch {
	case vtLen < 4 || vtLen%2 != 0:
		return fbTable{}, fbErr(vt, "%s: vtable length %d at %d is not an even number ≥ 4", what, vtLen, vt)
	case vt+vtLen > n:
		return fbTable{}, fbErr(vt, "%s: vtable at %d of %d bytes runs past flatbuffer of %d bytes", what, vt, vtLen, n)
	case tblLen < 4:
		return fbTable{}, fbErr(vt, "%s: table length %d at %d is below 4", what, tblLen, vt)
	case pos+tblLen > n:
		return fbTable{}, fbErr(pos, "%s: table at %d of %d bytes runs past flatbuffer of %d bytes", what, pos, tblLen, n)
	}
	return fbTable{buf: buf, pos: pos, vt: vt, vtLen: vtLen, tblLen: tblLen}, nil
}

// field returns the absolute position of field slot's value of size bytes,
// or 0 when the field is absent.
func (t fbTable) field(slot int, size int64, what string) (int64, error) {
	e := 4 + 2*int64(slot)
	if e+2 > t.vtLen {
		return 0, nil
	}
	off := int64(binary.LittleEndian.Uint16(t.buf[t.vt+e:]))
	if off == 0 {
		return 0, nil
	}
	// As the flatbuffers verifier checks it: the field must lie in the
	// buffer, not within the table length its vtable records — a builder
	// shares one vtable between tables whose field offsets match, whatever
	// their sizes, so that length is only the first such table's.
	if off < 4 || t.pos+off+size > int64(len(t.buf)) {
		return 0, fbErr(t.vt+e, "%s: field offset %d (%d bytes) of the table at %d runs past the flatbuffer of %d bytes", what, off, size, t.pos, len(t.buf))
	}
	return t.pos + off, nil
}

func (t fbTable) int64Field(slot int, def int64, what string) (int64, error) {
	p, err := t.field(slot, 8, what)
	if err != nil || p == 0 {
		return def, err
	}
	return int64(binary.LittleEndian.Uint64(t.buf[p:])), nil
}

func (t fbTable) int32Field(slot int, def int32, what string) (int32, error) {
	p, err := t.field(slot, 4, what)
	if err != nil || p == 0 {
		return def, err
	}
	return int32(binary.LittleEndian.Uint32(t.buf[p:])), nil
}

func (t fbTable) int16Field(slot int, def int16, what string) (int16, error) {
	p, err := t.field(slot, 2, what)
	if err != nil || p == 0 {
		return def, err
	}
	return int16(binary.LittleEndian.Uint16(t.buf[p:])), nil
}

func (t fbTable) uint8Field(slot int, def uint8, what string) (uint8, error) {
	p, err := t.field(slot, 1, what)
	if err != nil || p == 0 {
		return def, err
	}
	return t.buf[p], nil
}

func (t fbTable) boolField(slot int, what string) (bool, error) {
	v, err := t.uint8Field(slot, 0, what)
	return v != 0, err
}

// target follows the uoffset at p; the target must leave room for need
// bytes.
func (t fbTable) target(p, need int64, what string) (int64, error) {
	n := int64(len(t.buf))
	q := p + int64(binary.LittleEndian.Uint32(t.buf[p:]))
	if q > n-need {
		return 0, fbErr(p, "%s: offset at %d points to %d, outside flatbuffer of %d bytes", what, p, q, n)
	}
	return q, nil
}

// offsetField returns the position the uoffset in slot points to, or 0
// when the field is absent.
func (t fbTable) offsetField(slot int, need int64, what string) (int64, error) {
	p, err := t.field(slot, 4, what)
	if err != nil || p == 0 {
		return 0, err
	}
	return t.target(p, need, what)
}

// tableField returns the sub-table in slot; ok is false when absent.
func (t fbTable) tableField(slot int, what string) (sub fbTable, ok bool, err error) {
	p, err := t.field(slot, 4, what)
	if err != nil || p == 0 {
		return fbTable{}, false, err
	}
	q, err := t.target(p, 4, what)
	if err != nil {
		return fbTable{}, false, err
	}
	sub, err = fbTableAt(t.buf, q, p, what)
	return sub, err == nil, err
}

// fbVector is a checked vector: count elements of elemSize bytes from start.
type fbVector struct {
	buf   []byte
	start int64
	count int
	elem  int64
}

// vectorField returns the vector in slot (empty when absent).
func (t fbTable) vectorField(slot int, elemSize int64, what string) (fbVector, error) {
	q, err := t.offsetField(slot, 4, what)
	if err != nil || q == 0 {
		return fbVector{buf: t.buf, elem: elemSize}, err
	}
	count := int64(binary.LittleEndian.Uint32(t.buf[q:]))
	start := q + 4
	if count > (int64(len(t.buf))-start)/elemSize {
		return fbVector{}, fbErr(q, "%s: vector of %d elements of %d bytes at %d runs past flatbuffer of %d bytes", what, count, elemSize, q, len(t.buf))
	}
	if count > math.MaxInt32 {
		return fbVector{}, fbErr(q, "%s: vector of %d elements is too long", what, count)
	}
	return fbVector{buf: t.buf, start: start, count: int(count), elem: elemSize}, nil
}

// at returns the position of element i (the caller keeps i < count).
func (v fbVector) at(i int) int64 { return v.start + int64(i)*v.elem }

func (v fbVector) int64At(i int) int64 { return int64(binary.LittleEndian.Uint64(v.buf[v.at(i):])) }

// tableAt follows element i of a vector of tables.
func (v fbVector) tableAt(i int, what string) (fbTable, error) {
	p := v.at(i)
	q := p + int64(binary.LittleEndian.Uint32(v.buf[p:]))
	return fbTableAt(v.buf, q, p, what)
}

// stringAt follows element i of a vector of strings.
func (v fbVector) stringAt(i int, what string) (string, error) {
	return fbString(v.buf, v.at(i), what)
}

// fbString reads the string the uoffset at p points to.
func fbString(buf []byte, p int64, what string) (string, error) {
	n := int64(len(buf))
	q := p + int64(binary.LittleEndian.Uint32(buf[p:]))
	if q > n-4 {
		return "", fbErr(p, "%s: string offset at %d points to %d, outside flatbuffer of %d bytes", what, p, q, n)
	}
	l := int64(binary.LittleEndian.Uint32(buf[q:]))
	if l > n-q-4 {
		return "", fbErr(q, "%s: string of %d bytes at %d runs past flatbuffer of %d bytes", what, l, q, n)
	}
	return string(buf[q+4 : q+4+l]), nil
}

// stringField reads the string in slot; ok is false when absent.
func (t fbTable) stringField(slot int, what string) (s string, ok bool, err error) {
	p, err := t.field(slot, 4, what)
	if err != nil || p == 0 {
		return "", false, err
	}
	s, err = fbString(t.buf, p, what)
	return s, err == nil, err
}
