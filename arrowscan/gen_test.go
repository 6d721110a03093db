package arrowscan

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// genOptions describe a test file.
type genOptions struct {
	batches     int
	rows        int    // rows per batch
	compression string // "", "lz4", "zstd"
	deltas      bool   // dictionary grows batch by batch (delta dictionary batches)
	views       bool   // add a string_view column (variadic buffers)
	seed        uint64
}

// testSchema has the types the tests cover: primitives, timestamp, string,
// bool, a dictionary, a nullable column with nulls, a list and a struct.
func testSchema(views bool) *arrow.Schema {
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "country", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}},
		{Name: "maybe", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "point", Type: arrow.StructOf(
			arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64},
			arrow.Field{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
		), Nullable: true},
	}
	if views {
		fields = append(fields, arrow.Field{Name: "note", Type: arrow.BinaryTypes.StringView, Nullable: true})
	}
	md := arrow.NewMetadata([]string{"origin"}, []string{"arrowscan test"})
	return arrow.NewSchema(fields, &md)
}

var countries = []string{"DE", "FR", "US", "JP", "BR", "IN", "CN", "GB", "IT", "ES", "NL", "SE"}

// writeTestFile writes an Arrow IPC file with arrow-go's FileWriter.
func writeTestFile(t testing.TB, dir, name string, o genOptions) string {
	t.Helper()
	path := filepath.Join(dir, name)
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	schema := testSchema(o.views)
	opts := []ipc.Option{ipc.WithSchema(schema)}
	switch o.compression {
	case "lz4":
		opts = append(opts, ipc.WithLZ4())
	case "zstd":
		opts = append(opts, ipc.WithZstd())
	}
	if o.deltas {
		opts = append(opts, ipc.WithDictionaryDeltas(true))
	}
	w, err := ipc.NewFileWriter(out, opts...)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(o.seed, 7))
	mem := memory.NewGoAllocator()
	for b := 0; b < o.batches; b++ {
		rec := makeBatch(mem, schema, rng, b, o)
		if err := w.Write(rec); err != nil {
			t.Fatalf("write batch %d: %v", b, err)
		}
		rec.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func makeBatch(mem memory.Allocator, schema *arrow.Schema, rng *rand.Rand, b int, o genOptions) arrow.RecordBatch {
	bld := array.NewRecordBuilder(mem, schema)
	defer bld.Release()
	n := o.rows
	// With deltas the dictionary grows: batch b may use the first 4+b values.
	nDict := len(countries)
	if o.deltas {
		nDict = min(len(countries), 4+b)
	}
	// The dictionary starts with the same values in the same order in every
	// batch (a file may not replace a dictionary); with deltas it grows.
	sb := array.NewStringBuilder(mem)
	sb.AppendValues(countries[:nDict], nil)
	dictValues := sb.NewStringArray()
	sb.Release()
	defer dictValues.Release()
	if err := bld.Field(5).(*array.BinaryDictionaryBuilder).InsertStringDictValues(dictValues); err != nil {
		panic(err)
	}
	for r := 0; r < n; r++ {
		row := int64(b*n + r)
		bld.Field(0).(*array.Int64Builder).Append(row)
		bld.Field(1).(*array.Float64Builder).Append(rng.Float64() * 100)
		bld.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + row*1000))
		bld.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("name-%d-%x", row, rng.Uint32()))
		bld.Field(4).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
		db := bld.Field(5).(*array.BinaryDictionaryBuilder)
		if err := db.AppendString(countries[rng.IntN(nDict)]); err != nil {
			panic(err)
		}
		mb := bld.Field(6).(*array.Int32Builder)
		if rng.IntN(3) == 0 {
			mb.AppendNull()
		} else {
			mb.Append(rng.Int32())
		}
		lb := bld.Field(7).(*array.ListBuilder)
		if rng.IntN(5) == 0 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			vb := lb.ValueBuilder().(*array.Int32Builder)
			for k := rng.IntN(4); k > 0; k-- {
				vb.Append(int32(rng.IntN(1000)))
			}
		}
		sb := bld.Field(8).(*array.StructBuilder)
		if rng.IntN(7) == 0 {
			sb.AppendNull()
		} else {
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int64Builder).Append(-row)
			lab := sb.FieldBuilder(1).(*array.StringBuilder)
			if rng.IntN(2) == 0 {
				lab.AppendNull()
			} else {
				lab.Append(fmt.Sprintf("p%d", rng.IntN(100)))
			}
		}
		if o.views {
			vb := bld.Field(9).(*array.StringViewBuilder)
			switch rng.IntN(3) {
			case 0:
				vb.AppendNull()
			case 1:
				vb.Append("short")
			default:
				vb.Append(fmt.Sprintf("a string longer than twelve bytes %d", row))
			}
		}
	}
	return bld.NewRecordBatch()
}

// referenceRecords reads every record of path with arrow-go's own
// FileReader (the oracle); they are released when the test ends.
func referenceRecords(t testing.TB, path string) []arrow.RecordBatch {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	r, err := ipc.NewFileReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var recs []arrow.RecordBatch
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			t.Fatal(err)
		}
		// Dictionary arrays build their dictionary array lazily, which is a
		// data race when goroutines compare against the same reference:
		// build it now.
		for _, c := range rec.Columns() {
			if d, ok := c.(*array.Dictionary); ok {
				d.Dictionary()
			}
		}
		recs = append(recs, rec)
	}
	t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	return recs
}
