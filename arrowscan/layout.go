package arrowscan

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// fieldSpan is where one top-level field's data is in a record batch
// message: its nodes, buffers and variadic buffer counts, each a run of
// consecutive entries.
type fieldSpan struct {
	node0, nodes int
	buf0, bufs   int
	var0, vars   int
}

// layoutWalker consumes nodes, buffers and variadic counts the way
// arrow-go's arrayLoaderContext.loadArray does (ipc/file_reader.go), so
// that the spans it finds are exactly what the decoder will read.
type layoutWalker struct {
	bm     *batchMeta
	nodes  int
	bufs   int
	vars   int
	depth  int
	length int64 // length of the node consumed last
}

// hasValidity mirrors arrow-go's internal.HasValidityBitmap: in V4 only
// Null has no validity buffer slot; in V5 Null, unions and run-end encoded
// arrays have none.
func hasValidity(id arrow.Type, version int16) bool {
	if version < metadataV5 {
		return id != arrow.NULL
	}
	switch id {
	case arrow.NULL, arrow.DENSE_UNION, arrow.SPARSE_UNION, arrow.RUN_END_ENCODED:
		return false
	}
	return true
}

// common is loadCommon: one node, and a validity buffer slot if the type
// has one.
func (w *layoutWalker) common(id arrow.Type) {
	w.length = 0
	if w.nodes < len(w.bm.nodes) {
		w.length = w.bm.nodes[w.nodes].length
	}
	w.nodes++
	if hasValidity(id, w.bm.version) {
		w.buf(bitmapBytes(w.length))
	}
}

// varLen marks a buffer whose size the node does not fix (binary data).
const varLen = -1

// buf consumes one buffer slot whose content needs at most need bytes
// (varLen: unknown).
func (w *layoutWalker) buf(need int64) {
	w.bufs++
	w.bm.bufNeed = append(w.bm.bufNeed, need)
}

func bitmapBytes(n int64) int64 { return (n + 7) / 8 }

// fixedBytes is n values of a fixed-width type (bits per value; 0:
// unknown, varLen).
func fixedBytes(n int64, bits int) int64 {
	switch {
	case bits <= 0:
		return varLen
	case bits == 1:
		return bitmapBytes(n)
	}
	return n * int64((bits+7)/8)
}

func bitWidth(dt arrow.DataType) int {
	if fw, ok := dt.(arrow.FixedWidthDataType); ok {
		return fw.BitWidth()
	}
	return 0
}

func (w *layoutWalker) child(dt arrow.DataType) error {
	if w.depth >= maxDepth {
		return fmt.Errorf("type nested deeper than %d", maxDepth)
	}
	w.depth++
	err := w.walk(dt)
	w.depth--
	return err
}

func (w *layoutWalker) walk(dt arrow.DataType) error {
	switch dt := dt.(type) {
	case *arrow.NullType:
		w.nodes++
	case *arrow.DictionaryType:
		w.common(dt.IndexType.ID())
		w.buf(fixedBytes(w.length, bitWidth(dt.IndexType)))
	case *arrow.BooleanType,
		*arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type,
		*arrow.Float16Type, *arrow.Float32Type, *arrow.Float64Type,
		arrow.DecimalType,
		*arrow.Time32Type, *arrow.Time64Type,
		*arrow.TimestampType,
		*arrow.Date32Type, *arrow.Date64Type,
		*arrow.MonthIntervalType, *arrow.DayTimeIntervalType, *arrow.MonthDayNanoIntervalType,
		*arrow.DurationType:
		w.common(dt.ID())
		w.buf(fixedBytes(w.length, bitWidth(dt)))
	case *arrow.BinaryType, *arrow.StringType:
		w.common(dt.ID())
		w.buf((w.length + 1) * 4)
		w.buf(varLen)
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		w.common(dt.ID())
		w.buf((w.length + 1) * 8)
		w.buf(varLen)
	case arrow.BinaryViewDataType:
		if w.vars >= len(w.bm.variadic) {
			return fmt.Errorf("%s needs variadic buffer count %d, the batch has %d", dt, w.vars, len(w.bm.variadic))
		}
		n := int(w.bm.variadic[w.vars])
		w.vars++
		w.common(dt.ID())
		w.buf(w.length * 16)
		for range n {
			w.buf(varLen)
		}
	case *arrow.FixedSizeBinaryType:
		w.common(dt.ID())
		w.buf(w.length * int64(dt.ByteWidth))
	case *arrow.ListType:
		w.common(dt.ID())
		w.buf((w.length + 1) * 4)
		return w.child(dt.Elem())
	case *arrow.LargeListType:
		w.common(dt.ID())
		w.buf((w.length + 1) * 8)
		return w.child(dt.Elem())
	case *arrow.ListViewType:
		w.common(dt.ID())
		w.buf(w.length * 4)
		w.buf(w.length * 4)
		return w.child(dt.Elem())
	case *arrow.LargeListViewType:
		w.common(dt.ID())
		w.buf(w.length * 8)
		w.buf(w.length * 8)
		return w.child(dt.Elem())
	case *arrow.FixedSizeListType:
		w.common(dt.ID())
		return w.child(dt.Elem())
	case *arrow.StructType:
		w.common(dt.ID())
		for _, f := range dt.Fields() {
			if err := w.child(f.Type); err != nil {
				return err
			}
		}
	case *arrow.MapType:
		w.common(dt.ID())
		w.buf((w.length + 1) * 4)
		return w.child(dt.Elem())
	case arrow.ExtensionType:
		return w.walk(dt.StorageType())
	case *arrow.RunEndEncodedType:
		w.common(dt.ID())
		if err := w.child(dt.RunEnds()); err != nil {
			return err
		}
		return w.child(dt.Encoded())
	case arrow.UnionType:
		w.common(dt.ID())
		w.buf(w.length) // type ids
		if dt.Mode() == arrow.DenseMode {
			w.buf(w.length * 4) // offsets
		}
		for _, f := range dt.Fields() {
			if err := w.child(f.Type); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("type %s is not supported by arrow-go's IPC reader", dt)
	}
	return nil
}

// layoutBatch finds every top-level field's span in bm and checks that
// the batch has exactly the nodes, buffers and variadic counts the schema
// needs.
func layoutBatch(schema *arrow.Schema, bm *batchMeta) error {
	w := layoutWalker{bm: bm}
	bm.bufNeed = make([]int64, 0, len(bm.buffers))
	bm.fields = make([]fieldSpan, schema.NumFields())
	for i, f := range schema.Fields() {
		s := fieldSpan{node0: w.nodes, buf0: w.bufs, var0: w.vars}
		if err := w.walk(f.Type); err != nil {
			return fmt.Errorf("field %d (%q): %w", i, f.Name, err)
		}
		s.nodes, s.bufs, s.vars = w.nodes-s.node0, w.bufs-s.buf0, w.vars-s.var0
		bm.fields[i] = s
	}
	switch {
	case w.nodes != len(bm.nodes):
		return fmt.Errorf("the schema needs %d field nodes, the batch has %d", w.nodes, len(bm.nodes))
	case w.bufs != len(bm.buffers):
		return fmt.Errorf("the schema needs %d buffers, the batch has %d", w.bufs, len(bm.buffers))
	case w.vars != len(bm.variadic):
		return fmt.Errorf("the schema needs %d variadic buffer counts, the batch has %d", w.vars, len(bm.variadic))
	}
	return nil
}
