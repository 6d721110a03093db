package arrowscan

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// schemaMessage makes a Schema message flatbuffer whose fields are the
// footer's Field tables cols, in that order, unchanged: dictionary ids,
// names, metadata and children stay exactly as the file has them, so the
// file's DictionaryBatch messages resolve against it.
//
// It is a small hand-made prefix in front of a copy of the footer
// flatbuffer, pointing forward into it (flatbuffer offsets are unsigned and
// point forward; a table's vtable may lie before it):
//
//	0    u32 root offset → Message
//	4    Message vtable: 12, 12, version@4, header_type@6, header@8, bodyLength absent
//	16   Message table:  i32 12 (→ vtable at 4), i16 version, u8 1 (Schema), pad, u32 → Schema
//	28   Schema vtable:  12, 20, endianness@4, fields@8, custom_metadata@12, features@16
//	40   Schema table:   i32 12, i16 endianness, pad 2, u32 → fields, u32 → metadata, u32 → features
//	60   fields vector:  u32 n, n × u32 → Field tables in the footer copy
//	...  zero padding to a multiple of 8
//	P    the footer flatbuffer, unchanged
func schemaMessage(f *Footer, version int16, cols []int) []byte {
	const (
		msgVT, msgTbl = 4, 16
		schVT, schTbl = 28, 40
		fieldsVec     = 60
	)
	p := fieldsVec + 4 + 4*len(cols)
	p = (p + 7) &^ 7
	buf := make([]byte, p+len(f.raw))
	copy(buf[p:], f.raw)
	le16 := func(at, v int) { binary.LittleEndian.PutUint16(buf[at:], uint16(v)) }
	le32 := func(at, v int) { binary.LittleEndian.PutUint32(buf[at:], uint32(v)) }
	// forward writes the uoffset at `at` pointing to `to`.
	forward := func(at, to int) { le32(at, to-at) }

	le32(0, msgTbl)
	// Message vtable and table.
	le16(msgVT+0, 12)
	le16(msgVT+2, 12)
	le16(msgVT+4, 4) // version
	le16(msgVT+6, 6) // header_type
	le16(msgVT+8, 8) // header
	le16(msgVT+10, 0)
	le32(msgTbl, msgTbl-msgVT)
	le16(msgTbl+4, int(version))
	buf[msgTbl+6] = headerSchema
	forward(msgTbl+8, schTbl)
	// Schema vtable and table.
	le16(schVT+0, 12)
	le16(schVT+2, 20)
	le16(schVT+4, 4)
	le16(schVT+6, 8)
	le16(schVT+8, 0)
	le16(schVT+10, 0)
	le32(schTbl, schTbl-schVT)
	le16(schTbl+4, int(f.schema.endianness))
	forward(schTbl+8, fieldsVec)
	if f.schema.metaPos != 0 {
		le16(schVT+8, 12)
		forward(schTbl+12, p+int(f.schema.metaPos))
	}
	if f.schema.featPos != 0 {
		le16(schVT+10, 16)
		forward(schTbl+16, p+int(f.schema.featPos))
	}
	// Fields vector.
	le32(fieldsVec, len(cols))
	for i, c := range cols {
		at := fieldsVec + 4 + 4*i
		forward(at, p+int(f.schema.fields[c].pos))
	}
	return buf
}

// oneMessage is an ipc.MessageReader that yields one message, then io.EOF.
type oneMessage struct {
	msg  *ipc.Message
	done bool
}

func (m *oneMessage) Message() (*ipc.Message, error) {
	if m.done {
		return nil, io.EOF
	}
	m.done = true
	return m.msg, nil
}
func (m *oneMessage) Retain() {}
func (m *oneMessage) Release() {
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
}

// decodeSchema has arrow-go decode a schema message made by schemaMessage.
func decodeSchema(msgFB []byte) (schema *arrow.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			schema, err = nil, fmt.Errorf("arrow-go panicked decoding the schema: %v", p)
		}
	}()
	mr := &oneMessage{msg: ipc.NewMessage(memory.NewBufferBytes(msgFB), memory.NewBufferBytes(nil))}
	r, err := ipc.NewReaderFromMessageReader(mr)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	s := r.Schema()
	if s == nil {
		return nil, fmt.Errorf("arrow-go decoded no schema")
	}
	return s, nil
}
