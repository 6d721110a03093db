package arrowscan

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Message flatbuffers, as far as a scan needs them:
//
//	table Message { version: short; header_type: ubyte; header: MessageHeader (table);
//	                bodyLength: long; custom_metadata: [KeyValue] }
//	union MessageHeader { Schema = 1, DictionaryBatch = 2, RecordBatch = 3, ... }
//	table RecordBatch { length: long; nodes: [FieldNode]; buffers: [Buffer];
//	                    compression: BodyCompression; variadicBufferCounts: [long] }
//	struct FieldNode { length: long; null_count: long }      // 16 bytes
//	struct Buffer    { offset: long; length: long }          // 16 bytes, offset into the body
//	table BodyCompression { codec: byte (0 LZ4_FRAME, 1 ZSTD); method: byte (0 BUFFER) }
//	table DictionaryBatch { id: long; data: RecordBatch; isDelta: bool }

const (
	headerSchema          = 1
	headerDictionaryBatch = 2
	headerRecordBatch     = 3

	continuation = 0xFFFFFFFF
	noCodec      = -1
)

// fieldNode is a RecordBatch FieldNode.
type fieldNode struct{ length, nullCount int64 }

// bufferRef is a RecordBatch Buffer: a range of the message body.
type bufferRef struct{ offset, length int64 }

// batchMeta is a parsed, validated record batch (or dictionary data)
// message. Immutable once made.
type batchMeta struct {
	version  int16
	length   int64
	nodes    []fieldNode
	buffers  []bufferRef
	variadic []int64
	codec    int8 // noCodec, 0 LZ4_FRAME or 1 ZSTD
	custom   []keyValue
	bodyLen  int64
	fields   []fieldSpan // per top-level schema field (record batches only)
	bufNeed  []int64     // per buffer: most bytes its content needs, or varLen (record batches only)
}

// dictMeta is a parsed dictionary batch message.
type dictMeta struct {
	id      int64
	isDelta bool
	data    batchMeta
}

// messagePrefix checks the encapsulation of a message whose MetaLen bytes
// are meta and returns the length of the prefix before the flatbuffer
// (8, or 4 for files older than format 0.15). The flatbuffer is
// meta[prefix:].
func messagePrefix(meta []byte) (int, error) {
	if len(meta) < 8 {
		return 0, fbErr(0, "message metadata of %d bytes is too short", len(meta))
	}
	prefix := 4
	switch binary.LittleEndian.Uint32(meta) {
	case 0:
		return 0, fbErr(0, "end-of-stream marker where a message should start")
	case continuation:
		prefix = 8
	}
	l := int64(binary.LittleEndian.Uint32(meta[prefix-4:]))
	if l != int64(len(meta)-prefix) {
		return 0, fbErr(int64(prefix-4), "message length prefix %d does not match the footer's metadata length %d - %d", l, len(meta), prefix)
	}
	return prefix, nil
}

// parseMessage parses the message metadata meta (MetaLen bytes, prefix
// included) of a block whose body is bodyLen bytes, and checks that its
// header has type want. Errors carry the position within meta.
func parseMessage(meta []byte, bodyLen int64, want uint8) (fbTable, int16, []keyValue, error) {
	prefix, err := messagePrefix(meta)
	if err != nil {
		return fbTable{}, 0, nil, err
	}
	fb := meta[prefix:]
	shift := func(err error) error {
		var fe *fbError
		if errors.As(err, &fe) {
			return &fbError{Pos: fe.Pos + int64(prefix), What: fe.What}
		}
		return err
	}
	msg, err := fbRoot(fb, "message")
	if err != nil {
		return fbTable{}, 0, nil, shift(err)
	}
	version, err := msg.int16Field(0, 0, "message.version")
	if err != nil {
		return fbTable{}, 0, nil, shift(err)
	}
	if version != metadataV4 && version != metadataV5 {
		return fbTable{}, 0, nil, shift(fbErr(msg.pos, "message.version: %s not supported (want V4 or V5)", metadataVersion(version)))
	}
	ht, err := msg.uint8Field(1, 0, "message.header_type")
	if err != nil {
		return fbTable{}, 0, nil, shift(err)
	}
	if ht != want {
		return fbTable{}, 0, nil, shift(fbErr(msg.pos, "message.header_type: %s, want %s", headerName(ht), headerName(want)))
	}
	hdr, ok, err := msg.tableField(2, "message.header")
	if err != nil {
		return fbTable{}, 0, nil, shift(err)
	}
	if !ok {
		return fbTable{}, 0, nil, shift(fbErr(msg.pos, "message.header: missing"))
	}
	bl, err := msg.int64Field(3, 0, "message.bodyLength")
	if err != nil {
		return fbTable{}, 0, nil, shift(err)
	}
	if bl != bodyLen {
		return fbTable{}, 0, nil, shift(fbErr(msg.pos, "message.bodyLength %d does not match the footer's body length %d", bl, bodyLen))
	}
	custom, err := parseKeyValues(msg, 4, "message.custom_metadata")
	if err != nil {
		return fbTable{}, 0, nil, shift(err)
	}
	// Positions in errors from the header are made relative to meta too.
	hdr.buf = fb
	return hdr, version, custom, nil
}

func headerName(t uint8) string {
	switch t {
	case headerSchema:
		return "Schema"
	case headerDictionaryBatch:
		return "DictionaryBatch"
	case headerRecordBatch:
		return "RecordBatch"
	}
	return fmt.Sprintf("header type %d", t)
}

// parseRecordBatch parses a RecordBatch message's metadata (MetaLen bytes)
// and checks every node and buffer against the body of bodyLen bytes.
// Errors are *fbError with positions within meta.
func parseRecordBatch(meta []byte, bodyLen int64) (batchMeta, error) {
	hdr, version, custom, err := parseMessage(meta, bodyLen, headerRecordBatch)
	if err != nil {
		return batchMeta{}, err
	}
	prefix := int64(len(meta) - len(hdr.buf))
	bm, err := parseBatchTable(hdr, version, bodyLen, "recordBatch")
	if err != nil {
		var fe *fbError
		if errors.As(err, &fe) {
			return batchMeta{}, &fbError{Pos: fe.Pos + prefix, What: fe.What}
		}
		return batchMeta{}, err
	}
	bm.custom = custom
	return bm, nil
}

// parseDictionaryBatch parses a DictionaryBatch message's metadata.
func parseDictionaryBatch(meta []byte, bodyLen int64) (dictMeta, error) {
	hdr, version, _, err := parseMessage(meta, bodyLen, headerDictionaryBatch)
	if err != nil {
		return dictMeta{}, err
	}
	prefix := int64(len(meta) - len(hdr.buf))
	dm, err := func() (dictMeta, error) {
		var dm dictMeta
		var err error
		if dm.id, err = hdr.int64Field(0, 0, "dictionaryBatch.id"); err != nil {
			return dm, err
		}
		if dm.isDelta, err = hdr.boolField(2, "dictionaryBatch.isDelta"); err != nil {
			return dm, err
		}
		data, ok, err := hdr.tableField(1, "dictionaryBatch.data")
		if err != nil {
			return dm, err
		}
		if !ok {
			return dm, fbErr(hdr.pos, "dictionaryBatch.data: missing")
		}
		dm.data, err = parseBatchTable(data, version, bodyLen, "dictionaryBatch.data")
		return dm, err
	}()
	if err != nil {
		var fe *fbError
		if errors.As(err, &fe) {
			return dictMeta{}, &fbError{Pos: fe.Pos + prefix, What: fe.What}
		}
		return dictMeta{}, err
	}
	return dm, nil
}

// parseBatchTable reads a RecordBatch table.
func parseBatchTable(t fbTable, version int16, bodyLen int64, what string) (batchMeta, error) {
	bm := batchMeta{version: version, bodyLen: bodyLen, codec: noCodec}
	var err error
	if bm.length, err = t.int64Field(0, 0, what+".length"); err != nil {
		return bm, err
	}
	if bm.length < 0 {
		return bm, fbErr(t.pos, "%s.length: negative row count %d", what, bm.length)
	}
	nodes, err := t.vectorField(1, 16, what+".nodes")
	if err != nil {
		return bm, err
	}
	bm.nodes = make([]fieldNode, nodes.count)
	for i := range bm.nodes {
		p := nodes.at(i)
		n := fieldNode{length: int64(binary.LittleEndian.Uint64(t.buf[p:])), nullCount: int64(binary.LittleEndian.Uint64(t.buf[p+8:]))}
		if n.length < 0 || n.nullCount < 0 || n.nullCount > n.length {
			return bm, fbErr(p, "%s.nodes[%d]: length %d with null count %d", what, i, n.length, n.nullCount)
		}
		bm.nodes[i] = n
	}
	bufs, err := t.vectorField(2, 16, what+".buffers")
	if err != nil {
		return bm, err
	}
	bm.buffers = make([]bufferRef, bufs.count)
	for i := range bm.buffers {
		p := bufs.at(i)
		b := bufferRef{offset: int64(binary.LittleEndian.Uint64(t.buf[p:])), length: int64(binary.LittleEndian.Uint64(t.buf[p+8:]))}
		if b.offset < 0 || b.length < 0 || b.offset > bodyLen || b.length > bodyLen-b.offset {
			return bm, fbErr(p, "%s.buffers[%d]: offset %d length %d outside body of %d bytes", what, i, b.offset, b.length, bodyLen)
		}
		bm.buffers[i] = b
	}
	comp, ok, err := t.tableField(3, what+".compression")
	if err != nil {
		return bm, err
	}
	if ok {
		codec, err := comp.uint8Field(0, 0, what+".compression.codec")
		if err != nil {
			return bm, err
		}
		method, err := comp.uint8Field(1, 0, what+".compression.method")
		if err != nil {
			return bm, err
		}
		if codec > 1 || method != 0 {
			return bm, fbErr(comp.pos, "%s.compression: codec %d method %d not supported (want LZ4_FRAME or ZSTD, BUFFER)", what, codec, method)
		}
		bm.codec = int8(codec)
		// A compressed buffer starts with its int64 uncompressed length.
		for i, b := range bm.buffers {
			if b.length != 0 && b.length < 8 {
				return bm, fbErr(bufs.at(i), "%s.buffers[%d]: compressed buffer of %d bytes has no room for its length prefix", what, i, b.length)
			}
		}
	}
	vc, err := t.vectorField(4, 8, what+".variadicBufferCounts")
	if err != nil {
		return bm, err
	}
	if vc.count > 0 {
		bm.variadic = make([]int64, vc.count)
		for i := range bm.variadic {
			v := vc.int64At(i)
			if v < 0 || v > int64(len(bm.buffers)) {
				return bm, fbErr(vc.at(i), "%s.variadicBufferCounts[%d]: %d", what, i, v)
			}
			bm.variadic[i] = v
		}
	}
	return bm, nil
}
