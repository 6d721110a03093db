package arrowscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// File layout (Arrow IPC file format, as arrow-go writes it):
//
//	offset 0      "ARROW1" + 2 zero bytes
//	8             schema message (a stream's first message; not used here)
//	...           dictionary and record batch messages (encapsulated, below)
//	...           end-of-stream marker 0xFFFFFFFF 0x00000000
//	F             Footer flatbuffer (F = size - 10 - footerLen)
//	size-10       int32 footerLen (little endian)
//	size-6        "ARROW1"
//
//	table Footer { version: short; schema: Schema;
//	               dictionaries: [Block]; recordBatches: [Block]; custom_metadata: [KeyValue] }
//	struct Block { offset: long; metaDataLength: int; (4 pad) bodyLength: long }   // 24 bytes
//
// Each Block points at an encapsulated message:
//
//	Offset          0xFFFFFFFF continuation marker (absent in pre-0.15 files)
//	Offset+4        int32 flatbuffer length L (MetaLen = 8 + L, padded to 8)
//	Offset+8        Message flatbuffer (+ padding)
//	Offset+MetaLen  body: BodyLen bytes, the buffers the metadata points into

// magic starts and ends every Arrow IPC file.
var magic = []byte("ARROW1")

const (
	leadLen  = 8                  // "ARROW1" + 2 bytes of padding
	trailLen = 4 + 6              // int32 footer length + "ARROW1"
	minFile  = leadLen + trailLen // smallest possible file (with an empty footer)
	blockLen = 24                 // flatbuffer struct Block
	maxDepth = 64                 // nesting limit for fields, as arrow-go's kMaxNestingDepth
	metaMax  = 64 << 20           // largest message metadata accepted
	footMax  = math.MaxInt32 - 64 // largest footer accepted
)

// Block is one footer entry: the message at Offset has MetaLen bytes of
// length prefix + metadata flatbuffer + padding, then BodyLen bytes of body.
type Block struct {
	Offset  int64
	MetaLen int32
	BodyLen int64
}

// BodyOffset is the file offset of the block's body.
func (b Block) BodyOffset() int64 { return b.Offset + int64(b.MetaLen) }

// End is the file offset just past the block's body.
func (b Block) End() int64 { return b.Offset + int64(b.MetaLen) + b.BodyLen }

// Footer is a parsed, validated Arrow file footer. Immutable.
type Footer struct {
	Version       int16   // metadata version (4 = V5)
	Start         int64   // file offset of the footer flatbuffer
	Size          int64   // file size
	Dictionaries  []Block // dictionary batch messages, in file order
	RecordBatches []Block // record batch messages, in file order

	raw    []byte     // the footer flatbuffer
	schema schemaInfo // the schema table inside raw
}

// Metadata versions this package reads (arrow-go writes V5).
const (
	metadataV4 = 3
	metadataV5 = 4
)

// schemaInfo is the footer's Schema table: where its parts are in the
// footer flatbuffer, so that schema messages can point back into it.
type schemaInfo struct {
	endianness int16
	metaPos    int64 // position of the custom_metadata vector, 0 if absent
	featPos    int64 // position of the features vector, 0 if absent
	fields     []fieldInfo
}

// fieldInfo is one top-level field of the schema.
type fieldInfo struct {
	name    string
	pos     int64   // position of the Field table in the footer flatbuffer
	dictIDs []int64 // dictionary ids used in the field's subtree, pre-order
}

// ParseFooter reads and validates the footer of the Arrow IPC file of size
// bytes behind r. name is used in errors. The schema is checked as a
// flatbuffer (every offset in bounds, nesting ≤ 64); blocks are checked
// against the file: inside it, before the footer, 8-byte aligned. Errors are
// *CorruptError (or *ReadError when r fails).
func ParseFooter(r io.ReaderAt, size int64, name string) (*Footer, error) {
	if size < minFile {
		return nil, corrupt(name, "file", -1, "%d bytes is too short for an Arrow IPC file (need at least %d): truncated or not an Arrow file", size, minFile)
	}
	var lead [leadLen]byte
	if err := readFull(r, lead[:], 0, name, "leading magic"); err != nil {
		return nil, err
	}
	if !bytes.Equal(lead[:6], magic) {
		return nil, corrupt(name, "leading magic", 0, "got %q, want %q: not an Arrow IPC file", lead[:6], magic)
	}
	var trail [trailLen]byte
	if err := readFull(r, trail[:], size-trailLen, name, "trailing magic"); err != nil {
		return nil, err
	}
	if !bytes.Equal(trail[4:], magic) {
		return nil, corrupt(name, "trailing magic", size-6, "got %q, want %q: file truncated or not an Arrow IPC file", trail[4:], magic)
	}
	footLen := int64(int32(binary.LittleEndian.Uint32(trail[:4])))
	if footLen <= 0 || footLen > size-minFile || footLen > footMax {
		return nil, corrupt(name, "footer length", size-trailLen, "%d does not fit a file of %d bytes", footLen, size)
	}
	start := size - trailLen - footLen
	raw := make([]byte, footLen)
	if err := readFull(r, raw, start, name, "footer"); err != nil {
		return nil, err
	}
	f, err := parseFooterBytes(raw, start, size)
	if err != nil {
		var fe *fbError
		if errors.As(err, &fe) {
			return nil, corrupt(name, "footer", start+fe.Pos, "%s", fe.What)
		}
		return nil, &CorruptError{Path: name, Part: "footer", Offset: start, Detail: err.Error()}
	}
	return f, nil
}

func readFull(r io.ReaderAt, buf []byte, off int64, name, part string) error {
	n, err := r.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		return corrupt(name, part, off, "short read: %d of %d bytes (file truncated?)", n, len(buf))
	}
	return &ReadError{Path: name, Part: part, Offset: off, Len: int64(len(buf)), Err: err}
}

// parseFooterBytes parses the footer flatbuffer raw found at file offset
// start of a file of size bytes. Errors carrying a position are *fbError.
func parseFooterBytes(raw []byte, start, size int64) (*Footer, error) {
	root, err := fbRoot(raw, "footer")
	if err != nil {
		return nil, err
	}
	f := &Footer{Start: start, Size: size, raw: raw}
	if f.Version, err = root.int16Field(0, 0, "footer.version"); err != nil {
		return nil, err
	}
	if f.Version != metadataV4 && f.Version != metadataV5 {
		return nil, fbErr(root.pos, "footer.version: %s not supported (want V4 or V5)", metadataVersion(f.Version))
	}
	st, ok, err := root.tableField(1, "footer.schema")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fbErr(root.pos, "footer.schema: missing")
	}
	if f.schema, err = parseSchema(st); err != nil {
		return nil, err
	}
	if f.Dictionaries, err = parseBlocks(root, 2, "footer.dictionaries", start); err != nil {
		return nil, err
	}
	if f.RecordBatches, err = parseBlocks(root, 3, "footer.recordBatches", start); err != nil {
		return nil, err
	}
	if _, err := parseKeyValues(root, 4, "footer.custom_metadata"); err != nil {
		return nil, err
	}
	return f, nil
}

func parseBlocks(root fbTable, slot int, what string, footerStart int64) ([]Block, error) {
	v, err := root.vectorField(slot, blockLen, what)
	if err != nil {
		return nil, err
	}
	blocks := make([]Block, v.count)
	for i := range blocks {
		p := v.at(i)
		b := Block{
			Offset:  int64(binary.LittleEndian.Uint64(v.buf[p:])),
			MetaLen: int32(binary.LittleEndian.Uint32(v.buf[p+8:])),
			BodyLen: int64(binary.LittleEndian.Uint64(v.buf[p+16:])),
		}
		if err := checkBlock(b, footerStart); err != nil {
			return nil, fbErr(p, "%s[%d]: %v", what, i, err)
		}
		blocks[i] = b
	}
	return blocks, nil
}

// checkBlock applies arrow-go's validateFileBlock and the alignment checks
// of its readers, and also keeps the block out of the leading magic and
// the footer.
func checkBlock(b Block, footerStart int64) error {
	switch {
	case b.Offset < leadLen || b.Offset%8 != 0:
		return fmt.Errorf("offset %d is not an 8-byte aligned offset after the leading magic", b.Offset)
	case b.MetaLen < 8 || b.MetaLen%8 != 0 || b.MetaLen > metaMax:
		return fmt.Errorf("metadata length %d is not a multiple of 8 in [8, %d]", b.MetaLen, metaMax)
	case b.BodyLen < 0 || b.BodyLen%8 != 0:
		return fmt.Errorf("body length %d is not a non-negative multiple of 8", b.BodyLen)
	case b.Offset > footerStart || int64(b.MetaLen) > footerStart-b.Offset || b.BodyLen > footerStart-b.Offset-int64(b.MetaLen):
		return fmt.Errorf("block at offset %d with metadata %d and body %d bytes runs past the footer at %d", b.Offset, b.MetaLen, b.BodyLen, footerStart)
	}
	return nil
}

// parseSchema checks the Schema table st and everything under it.
func parseSchema(st fbTable) (schemaInfo, error) {
	var si schemaInfo
	var err error
	if si.endianness, err = st.int16Field(0, 0, "schema.endianness"); err != nil {
		return si, err
	}
	fields, err := st.vectorField(1, 4, "schema.fields")
	if err != nil {
		return si, err
	}
	if _, err := parseKeyValues(st, 2, "schema.custom_metadata"); err != nil {
		return si, err
	}
	if si.metaPos, err = st.offsetField(2, 4, "schema.custom_metadata"); err != nil {
		return si, err
	}
	if _, err := st.vectorField(3, 8, "schema.features"); err != nil {
		return si, err
	}
	if si.featPos, err = st.offsetField(3, 4, "schema.features"); err != nil {
		return si, err
	}
	si.fields = make([]fieldInfo, fields.count)
	// Distinct tables need at least 4 bytes each, so a tree of more Field
	// tables than that shares tables (or loops): refuse it before walking
	// it explodes (or arrow-go, which follows children without a depth
	// limit, overflows its stack).
	budget := int64(len(st.buf)) / 4
	for i := range si.fields {
		what := fmt.Sprintf("schema.fields[%d]", i)
		ft, err := fields.tableAt(i, what)
		if err != nil {
			return si, err
		}
		fi := fieldInfo{pos: ft.pos}
		if fi.name, _, err = ft.stringField(0, what+".name"); err != nil {
			return si, err
		}
		if err := checkField(ft, what, 0, &budget, &fi.dictIDs); err != nil {
			return si, err
		}
		si.fields[i] = fi
	}
	return si, nil
}

// Arrow's flatbuffer Type union members that carry more than scalars.
const (
	fbTypeTimestamp = 10
	fbTypeUnion     = 14
	fbTypeMax       = 26 // LargeListView
)

// checkField checks a Field table and its children, collecting the
// dictionary ids it uses.
//
//	table Field { name: string; nullable: bool; type_type: ubyte; type: Type;
//	              dictionary: DictionaryEncoding; children: [Field]; custom_metadata: [KeyValue] }
//	table DictionaryEncoding { id: long; indexType: Int; isOrdered: bool; dictionaryKind: short }
func checkField(ft fbTable, what string, depth int, budget *int64, dictIDs *[]int64) error {
	if depth > maxDepth {
		return fbErr(ft.pos, "%s: fields nested deeper than %d", what, maxDepth)
	}
	if *budget--; *budget < 0 {
		return fbErr(ft.pos, "%s: more Field tables than the footer has room for (tables shared or in a loop)", what)
	}
	if _, _, err := ft.stringField(0, what+".name"); err != nil {
		return err
	}
	if _, err := ft.boolField(1, what+".nullable"); err != nil {
		return err
	}
	tt, err := ft.uint8Field(2, 0, what+".type_type")
	if err != nil {
		return err
	}
	if tt == 0 || tt > fbTypeMax {
		return fbErr(ft.pos, "%s.type_type: unknown type %d", what, tt)
	}
	typ, ok, err := ft.tableField(3, what+".type")
	if err != nil {
		return err
	}
	if !ok {
		return fbErr(ft.pos, "%s.type: missing", what)
	}
	if err := checkScalars(typ, what+".type"); err != nil {
		return err
	}
	switch tt {
	case fbTypeTimestamp:
		if _, _, err := typ.stringField(1, what+".type.timezone"); err != nil {
			return err
		}
	case fbTypeUnion:
		if _, err := typ.vectorField(1, 4, what+".type.typeIds"); err != nil {
			return err
		}
	}
	dict, ok, err := ft.tableField(4, what+".dictionary")
	if err != nil {
		return err
	}
	if ok {
		id, err := dict.int64Field(0, 0, what+".dictionary.id")
		if err != nil {
			return err
		}
		idx, ok, err := dict.tableField(1, what+".dictionary.indexType")
		if err != nil {
			return err
		}
		if ok {
			if err := checkScalars(idx, what+".dictionary.indexType"); err != nil {
				return err
			}
		}
		if _, err := dict.boolField(2, what+".dictionary.isOrdered"); err != nil {
			return err
		}
		if _, err := dict.int16Field(3, 0, what+".dictionary.dictionaryKind"); err != nil {
			return err
		}
		*dictIDs = append(*dictIDs, id)
	}
	children, err := ft.vectorField(5, 4, what+".children")
	if err != nil {
		return err
	}
	for i := 0; i < children.count; i++ {
		cw := fmt.Sprintf("%s.children[%d]", what, i)
		ct, err := children.tableAt(i, cw)
		if err != nil {
			return err
		}
		if err := checkField(ct, cw, depth+1, budget, dictIDs); err != nil {
			return err
		}
	}
	_, err = parseKeyValues(ft, 6, what+".custom_metadata")
	return err
}

// checkScalars checks that every field of a table that holds only scalars
// (and at most the offsets checked by the caller) lies inside the table.
func checkScalars(t fbTable, what string) error {
	for slot := 0; 4+2*int64(slot)+2 <= t.vtLen; slot++ {
		if _, err := t.field(slot, 1, what); err != nil {
			return err
		}
	}
	return nil
}

// keyValue is one custom metadata entry.
type keyValue struct{ key, value string }

// parseKeyValues reads a [KeyValue] vector (table KeyValue { key: string; value: string }).
func parseKeyValues(t fbTable, slot int, what string) ([]keyValue, error) {
	v, err := t.vectorField(slot, 4, what)
	if err != nil || v.count == 0 {
		return nil, err
	}
	kvs := make([]keyValue, v.count)
	for i := range kvs {
		w := fmt.Sprintf("%s[%d]", what, i)
		kt, err := v.tableAt(i, w)
		if err != nil {
			return nil, err
		}
		if kvs[i].key, _, err = kt.stringField(0, w+".key"); err != nil {
			return nil, err
		}
		if kvs[i].value, _, err = kt.stringField(1, w+".value"); err != nil {
			return nil, err
		}
	}
	return kvs, nil
}

// metadataVersion names a MetadataVersion as the format does: the enum's
// value 0 is V1, so 2 is V3.
func metadataVersion(v int16) string {
	if v >= 0 && v <= 4 {
		return fmt.Sprintf("metadata version V%d (%d)", v+1, v)
	}
	return fmt.Sprintf("metadata version %d (not a MetadataVersion)", v)
}
