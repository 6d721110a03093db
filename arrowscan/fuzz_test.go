package arrowscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"
)

// seedFiles returns small Arrow files of every flavour the tests write.
func seedFiles(f *testing.F) [][]byte {
	dir := f.TempDir()
	var out [][]byte
	for i, o := range []genOptions{
		{batches: 2, rows: 5, seed: 1},
		{batches: 1, rows: 7, compression: "lz4", seed: 2},
		{batches: 2, rows: 3, compression: "zstd", views: true, seed: 3},
		{batches: 0, rows: 0, seed: 4},
	} {
		path := writeTestFile(f, dir, string(rune('a'+i))+".arrow", o)
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func FuzzParseFooter(f *testing.F) {
	for _, b := range seedFiles(f) {
		f.Add(b)
		f.Add(b[:len(b)-3])
	}
	f.Add([]byte("ARROW1\x00\x00\x04\x00\x00\x00ARROW1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ft, err := ParseFooter(bytes.NewReader(data), int64(len(data)), "fuzz.arrow")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.arrow") || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not name the file or is not ErrCorrupt: %v", err)
			}
			return
		}
		for _, b := range append(ft.Dictionaries, ft.RecordBatches...) {
			if b.Offset < leadLen || b.End() > ft.Start {
				t.Fatalf("block %+v outside [%d, %d)", b, leadLen, ft.Start)
			}
		}
		// The schema message built from it must be readable by our own
		// flatbuffer reader (and decodable by arrow-go, or an error).
		all := make([]int, len(ft.schema.fields))
		for i := range all {
			all[i] = i
		}
		msg := schemaMessage(ft, ft.Version, all)
		if _, err := fbRoot(msg, "schema message"); err != nil {
			t.Fatalf("schema message: %v", err)
		}
		_, _ = decodeSchema(msg)
	})
}

// FuzzParseMessage fuzzes the record batch and dictionary batch metadata
// parsers: metadata bytes (with their length prefix) and a body length.
func FuzzParseMessage(f *testing.F) {
	for _, b := range seedFiles(f) {
		ft, err := ParseFooter(bytes.NewReader(b), int64(len(b)), "seed")
		if err != nil {
			f.Fatal(err)
		}
		for _, blk := range append(ft.Dictionaries, ft.RecordBatches...) {
			f.Add(b[blk.Offset:blk.BodyOffset()], blk.BodyLen)
		}
	}
	f.Fuzz(func(t *testing.T, meta []byte, bodyLen int64) {
		if bm, err := parseRecordBatch(meta, bodyLen); err == nil {
			for i, b := range bm.buffers {
				if b.offset < 0 || b.length < 0 || b.offset+b.length > bodyLen {
					t.Fatalf("buffer %d %+v outside body of %d", i, b, bodyLen)
				}
			}
		} else {
			var fe *fbError
			if !errors.As(err, &fe) || fe.Pos < 0 || fe.Pos > int64(len(meta)) {
				t.Fatalf("error %v: want an *fbError with a position inside the metadata", err)
			}
		}
		_, _ = parseDictionaryBatch(meta, bodyLen)
		if len(meta) >= 8 {
			// The same flatbuffer with the other prefix forms.
			alt := bytes.Clone(meta)
			binary.LittleEndian.PutUint32(alt, uint32(len(alt)-4))
			_, _ = parseRecordBatch(alt, bodyLen)
		}
	})
}

// FuzzOpenScan runs Open and a full scan (decode and validation included)
// over arbitrary bytes held in memory: errors must name the file, and
// nothing may panic or exhaust memory.
func FuzzOpenScan(f *testing.F) {
	for _, b := range seedFiles(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz.arrow"
		file, err := openBytes(name, data)
		if err == nil {
			for _, cols := range [][]string{nil, {"country"}, {"note", "id"}} {
				if err = consume(file, cols); err != nil && !errors.Is(err, ErrUnknownColumn) {
					break
				}
				err = nil
			}
			file.Close()
		}
		if err != nil && !strings.Contains(err.Error(), name) {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}
