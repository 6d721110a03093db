package arrowscan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/ringstore/ringstore/internal/testdir"
)

// writeArrowGoFile writes name with arrow-go's own file writer: batches
// record batches of schema, each filled by fill.
func writeArrowGoFile(t *testing.T, name string, schema *arrow.Schema, batches int, fill func(b *array.RecordBuilder, batch int)) string {
	t.Helper()
	path := filepath.Join(testdir.Direct(t), name)
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(fh, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		t.Fatal(err)
	}
	for batch := range batches {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		fill(b, batch)
		rec := b.NewRecordBatch()
		err := w.Write(rec)
		rec.Release()
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkEveryMode scans path in every mode with each projection and
// compares with arrow-go's reader.
func checkEveryMode(t *testing.T, path string, projections [][]string) {
	t.Helper()
	ref := referenceRecords(t, path)
	for _, m := range allModes() {
		t.Run(m.name, func(t *testing.T) {
			opts := m.opts(t)
			for _, cols := range projections {
				checkScan(t, path, opts, cols, ref)
			}
		})
	}
}

// TestNullTypeColumns: a file arrow-go writes with null-type columns — at
// the top level and inside a struct and a list — reads in every mode with
// the values arrow-go's own reader gives (its null arrays have no buffers,
// which arrow-go's array.Validate alone would refuse).
func TestNullTypeColumns(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "n", Type: arrow.Null, Nullable: true},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32}, arrow.Field{Name: "z", Type: arrow.Null, Nullable: true})},
		{Name: "l", Type: arrow.ListOf(arrow.Null)},
	}, nil)
	path := writeArrowGoFile(t, "nulls.arrow", schema, 3, func(b *array.RecordBuilder, batch int) {
		for i := 0; i < 40; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(batch*100 + i))
			b.Field(1).(*array.NullBuilder).AppendNull()
			sb := b.Field(2).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
			sb.FieldBuilder(1).(*array.NullBuilder).AppendNull()
			lb := b.Field(3).(*array.ListBuilder)
			lb.Append(true)
			for range i % 3 {
				lb.ValueBuilder().(*array.NullBuilder).AppendNull()
			}
		}
	})
	checkEveryMode(t, path, [][]string{{"id", "n", "s", "l"}, {"n"}, {"s"}, {"l", "id"}})
}

// TestSharedVTables: a file arrow-go writes with a second dictionary column
// after a column with custom metadata — whose flatbuffers builder shares
// one vtable between tables of different sizes — opens and reads in every
// mode as arrow-go reads it.
func TestSharedVTables(t *testing.T) {
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "m", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"unit"}, []string{"ms"})},
		{Name: "d1", Type: dictType},
		{Name: "d2", Type: dictType},
	}, nil)
	path := writeArrowGoFile(t, "dicts.arrow", schema, 1, func(b *array.RecordBuilder, _ int) {
		for i := 0; i < 50; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			if err := b.Field(1).(*array.BinaryDictionaryBuilder).AppendString([]string{"x", "y", "z"}[i%3]); err != nil {
				t.Fatal(err)
			}
			if err := b.Field(2).(*array.BinaryDictionaryBuilder).AppendString([]string{"p", "q"}[i%2]); err != nil {
				t.Fatal(err)
			}
		}
	})
	checkEveryMode(t, path, [][]string{{"m", "d1", "d2"}, {"d2"}})
}
