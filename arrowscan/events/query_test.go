package events

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// queryData is the data set the query tests share: several files, batches
// that do not divide the rows, and the three compressions.
func queryData(t *testing.T, compression string) []string {
	return generated(t, GenOptions{Rows: 120_001, RowsPerBatch: 9_000, Files: 3, Seed: 11, Compression: compression})
}

// TestQueriesMatchReference is the correctness test of the query layer:
// every query over projected records equals the row-at-a-time reference
// over full records from arrow-go's FileReader, for every compression,
// and the results of all compressions are equal.
func TestQueriesMatchReference(t *testing.T) {
	for _, q := range Queries() {
		t.Run(q.Name, func(t *testing.T) {
			var first *Result
			for _, c := range []string{"none", "lz4", "zstd"} {
				paths := queryData(t, c)
				got := runOverFiles(t, paths, q.Name)
				want, err := Reference(paths, q.Name)
				if err != nil {
					t.Fatal(err)
				}
				if err := got.Equal(want); err != nil {
					t.Fatalf("compression %s: fast path vs reference: %v\nfast:\n%s\nreference:\n%s", c, err, got, want)
				}
				if len(got.Rows) == 0 || got.RowsScanned != 120_001 {
					t.Fatalf("compression %s: %d result rows, %d scanned", c, len(got.Rows), got.RowsScanned)
				}
				if first == nil {
					first = got
				} else if err := got.Equal(first); err != nil {
					t.Fatalf("compression %s vs none: %v", c, err)
				}
			}
		})
	}
}

// TestQueriesOverFullRecords: Execution finds its columns by name, so full
// records (every column, schema order) give the same results.
func TestQueriesOverFullRecords(t *testing.T) {
	paths := queryData(t, "none")
	p := paramsOfFiles(t, paths)
	for _, q := range Queries() {
		var srcs []Batches
		for _, path := range paths {
			srcs = append(srcs, openBatches(t, path, nil))
		}
		got, err := RunBatches(q.Name, p, srcs...)
		if err != nil {
			t.Fatal(err)
		}
		if err := got.Equal(runOverFiles(t, paths, q.Name)); err != nil {
			t.Errorf("%s: full records vs projected: %v", q.Name, err)
		}
	}
}

// TestQueryWindowsSelectAFraction: the windows are derived from the data's
// time range and select the share of rows they say.
func TestQueryWindowsSelectAFraction(t *testing.T) {
	paths := queryData(t, "none")
	sum := func(r *Result, col int) (n int64) {
		for _, row := range r.Rows {
			n += row[col].(int64)
		}
		return n
	}
	for _, c := range []struct {
		query string
		col   int
		share float64
	}{
		{"country_window", 1, 0.2},
		{"latency_by_type_hour", 2, 0.25},
		{"event_summary", 1, 0.5},
		{"mobile_share_by_country", 1, 1},
	} {
		r := runOverFiles(t, paths, c.query)
		got := float64(sum(r, c.col)) / float64(r.RowsScanned)
		if math.Abs(got-c.share) > 0.01 {
			t.Errorf("%s selects %.4f of the rows, want %.2f", c.query, got, c.share)
		}
	}
	r := runOverFiles(t, paths, "latency_by_type_hour")
	if hours := map[string]bool{}; true {
		for _, row := range r.Rows {
			hours[row[0].(string)] = true
		}
		if len(hours) != 6 {
			t.Errorf("latency_by_type_hour covers %d hours of the last quarter of a day, want 6", len(hours))
		}
	}
}

func TestQueriesListColumns(t *testing.T) {
	qs := Queries()
	if len(qs) < 6 {
		t.Fatalf("%d queries", len(qs))
	}
	names := map[string]bool{}
	narrow, full := false, false
	for _, q := range qs {
		if names[q.Name] || q.Name == "" || q.Description == "" || len(q.ResultColumns) == 0 {
			t.Errorf("query %+v: duplicate or incomplete", q)
		}
		names[q.Name] = true
		for _, c := range q.Columns {
			if _, ok := fieldByName(c); !ok {
				t.Errorf("%s reads unknown column %s", q.Name, c)
			}
		}
		narrow = narrow || len(q.Columns) == 1
		full = full || len(q.Columns) == len(fields)
		func() {
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("%s has no reference: %v", q.Name, v)
				}
			}()
			newReferenceQuery(q.Name, Params{Start: 0, End: 100})
		}()
	}
	if !narrow || !full {
		t.Errorf("want a single-column and a full-width query (narrow %v, full %v)", narrow, full)
	}
	qs[0].Columns[0] = "mutated"
	if Queries()[0].Columns[0] == "mutated" {
		t.Error("Queries hands out its own slices")
	}
}

func TestUnknownQuery(t *testing.T) {
	_, err := NewExecution("nope", Params{Start: 0, End: 1})
	if !errors.Is(err, ErrUnknownQuery) || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "bytes_total") {
		t.Errorf("error %v", err)
	}
	if _, err := Reference(nil, "nope"); !errors.Is(err, ErrUnknownQuery) {
		t.Errorf("Reference: %v", err)
	}
	if _, err := NewExecution("bytes_total", Params{Start: 5, End: 5}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("empty range: %v", err)
	}
}

// record builds a one-batch record with the given columns.
func record(fs []arrow.Field, cols []arrow.Array) arrow.RecordBatch {
	n := int64(0)
	if len(cols) > 0 {
		n = int64(cols[0].Len())
	}
	return array.NewRecordBatch(arrow.NewSchema(fs, nil), cols, n)
}

// TestExecutionRejectsBadRecords: wrong, missing or malformed columns give
// errors naming the record and the column, never a panic.
func TestExecutionRejectsBadRecords(t *testing.T) {
	mem := memory.NewGoAllocator()
	i64 := func(vals []int64, valid []bool) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(vals, valid)
		return b.NewArray()
	}
	i32 := func(vals ...int32) arrow.Array {
		b := array.NewInt32Builder(mem)
		defer b.Release()
		b.AppendValues(vals, nil)
		return b.NewArray()
	}
	dict := func(t *arrow.DictionaryType, idx []int16, values ...string) arrow.Array {
		sb := array.NewStringBuilder(mem)
		defer sb.Release()
		sb.AppendValues(values, nil)
		d := sb.NewArray()
		defer d.Release()
		ib := array.NewInt16Builder(mem)
		defer ib.Release()
		ib.AppendValues(idx, nil)
		ia := ib.NewArray()
		defer ia.Release()
		return array.NewDictionaryArray(t, ia, d)
	}
	badStrings := func(offsets []int32, data string) arrow.Array {
		d := array.NewData(arrow.BinaryTypes.String, len(offsets)-1, []*memory.Buffer{nil,
			memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offsets)), memory.NewBufferBytes([]byte(data))}, nil, 0, 0)
		defer d.Release()
		return array.MakeFromData(d)
	}
	uaF := arrow.Field{Name: ColUserAgent, Type: arrow.BinaryTypes.String}
	bytesF := arrow.Field{Name: ColBytes, Type: arrow.PrimitiveTypes.Int64}
	statusF := arrow.Field{Name: ColStatus, Type: arrow.PrimitiveTypes.Int32}
	countryF := arrow.Field{Name: ColCountry, Type: countryType}
	sessF := arrow.Field{Name: ColSessionID, Type: arrow.PrimitiveTypes.Int64}
	cases := []struct {
		name, query string
		rec         arrow.RecordBatch
		err         error
		want        string
	}{
		{"missing column", "bytes_total", record([]arrow.Field{statusF}, []arrow.Array{i32(1)}), ErrSchema, "no column bytes"},
		{"wrong type", "bytes_total", record([]arrow.Field{{Name: ColBytes, Type: arrow.PrimitiveTypes.Int32}}, []arrow.Array{i32(1)}), ErrSchema, "column bytes has type int32, want int64"},
		{"duplicate column", "bytes_total", record([]arrow.Field{bytesF, bytesF}, []arrow.Array{i64([]int64{1}, nil), i64([]int64{2}, nil)}), ErrSchema, "2 columns named bytes"},
		{"null in non-null column", "bytes_total", record([]arrow.Field{bytesF}, []arrow.Array{i64([]int64{1, 2}, []bool{true, false})}), ErrBadData, "column bytes has 1 nulls"},
		{"index out of range", "server_errors_by_country", record([]arrow.Field{statusF, countryF, sessF},
			[]arrow.Array{i32(500, 501), dict(countryType, []int16{0, 7}, "US", "DE"), i64([]int64{1, 2}, nil)}), ErrBadData, "row 1: index 7 outside the dictionary of 2 values"},
		{"string offsets decrease", "mobile_share_by_country", record([]arrow.Field{countryF, uaF},
			[]arrow.Array{dict(countryType, []int16{0, 0}, "US"), badStrings([]int32{0, 5, 3}, "Mobil")}), ErrBadData, "row 1: string offsets decrease (3 after 5)"},
		{"negative string offset", "mobile_share_by_country", record([]arrow.Field{countryF, uaF},
			[]arrow.Array{dict(countryType, []int16{0}, "US"), badStrings([]int32{-2, 3}, "abc")}), ErrBadData, "negative string offset -2"},
		{"negative index", "server_errors_by_country", record([]arrow.Field{statusF, countryF, sessF},
			[]arrow.Array{i32(500, 501), dict(countryType, []int16{-1, 0}, "US"), i64([]int64{1, 2}, nil)}), ErrBadData, "index -1"},
		// Longer columns: the checks' first pass runs in lanes of four.
		{"index out of range in a long column", "server_errors_by_country", record([]arrow.Field{statusF, countryF, sessF},
			[]arrow.Array{i32(500, 501, 502, 503, 504, 505, 506, 507, 508, 509), dict(countryType, []int16{0, 1, 0, 1, 0, 1, 0, 1, 0, 2}, "US", "DE"),
				i64(make([]int64, 10), nil)}), ErrBadData, "row 9: index 2 outside the dictionary of 2 values"},
		{"negative index in a long column", "server_errors_by_country", record([]arrow.Field{statusF, countryF, sessF},
			[]arrow.Array{i32(500, 501, 502, 503, 504, 505, 506, 507, 508), dict(countryType, []int16{0, 1, 0, 1, 0, -3, 0, 1, 0}, "US", "DE"),
				i64(make([]int64, 9), nil)}), ErrBadData, "row 5: index -3"},
		{"string offsets decrease in a long column", "mobile_share_by_country", record([]arrow.Field{countryF, uaF},
			[]arrow.Array{dict(countryType, make([]int16, 9), "US"), badStrings([]int32{0, 1, 2, 3, 4, 5, 6, 5, 7, 8}, "MobileMo")}), ErrBadData,
			"row 6: string offsets decrease (5 after 6)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer c.rec.Release()
			e, err := NewExecution(c.query, Params{Start: 0, End: 1000})
			if err != nil {
				t.Fatal(err)
			}
			err = e.Add("file x.arrow: batch 3", c.rec)
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "file x.arrow: batch 3") {
				t.Errorf("error %v, want %v mentioning %q and the batch", err, c.err, c.want)
			}
		})
	}
}

func TestParamsOf(t *testing.T) {
	mk := func(kv ...string) *arrow.Schema {
		var k, v []string
		for i := 0; i+1 < len(kv); i += 2 {
			k, v = append(k, kv[i]), append(v, kv[i+1])
		}
		md := arrow.NewMetadata(k, v)
		return arrow.NewSchema(fields, &md)
	}
	p, err := ParamsOf([]string{"a", "b"}, []*arrow.Schema{mk(MetaTSStart, "100", MetaTSEnd, "200"), mk(MetaTSStart, "200", MetaTSEnd, "350")})
	if err != nil || p != (Params{Start: 100, End: 350}) {
		t.Errorf("ParamsOf = %+v, %v", p, err)
	}
	if at := p.at(1, 5); at != 150 {
		t.Errorf("at(1,5) = %d", at)
	}
	for _, c := range []struct {
		s    *arrow.Schema
		want string
	}{
		{mk(), "metadata key events.ts_start_us missing"},
		{mk(MetaTSStart, "1"), "events.ts_end_us missing"},
		{mk(MetaTSStart, "x", MetaTSEnd, "2"), `"x" is not an integer`},
		{mk(MetaTSStart, "5", MetaTSEnd, "5"), "is empty"},
		{mk(MetaTSStart, "-9223372036854775808", MetaTSEnd, "9223372036854775807"), "too wide"},
		{nil, "no schema"},
	} {
		_, err := ParamsOf([]string{"f.arrow"}, []*arrow.Schema{c.s})
		if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "f.arrow") {
			t.Errorf("error %v, want ErrSchema naming f.arrow and %q", err, c.want)
		}
	}
	if _, err := ParamsOf(nil, nil); !errors.Is(err, ErrSchema) {
		t.Errorf("no schemas: %v", err)
	}
	if s := (Params{Start: DefaultStart.UnixMicro(), End: DefaultStart.Add(time.Hour).UnixMicro()}).String(); s != "[2024-06-01T00:00:00Z, 2024-06-01T01:00:00Z)" {
		t.Errorf("String %q", s)
	}
}

// FuzzParamsOf: the metadata decoder never panics and accepts only a
// non-empty range it can represent.
func FuzzParamsOf(f *testing.F) {
	f.Add("100", "200")
	f.Add("-5", "x")
	f.Add("9223372036854775807", "-9223372036854775808")
	f.Add("", "1e3")
	f.Fuzz(func(t *testing.T, start, end string) {
		md := arrow.NewMetadata([]string{MetaTSStart, MetaTSEnd}, []string{start, end})
		p, err := ParamsOf(nil, []*arrow.Schema{arrow.NewSchema(fields, &md)})
		if err == nil {
			if p.End <= p.Start || p.End-p.Start <= 0 {
				t.Fatalf("accepted range %+v", p)
			}
			if at := p.at(1, 2); at < p.Start || at >= p.End {
				t.Fatalf("midpoint %d outside %+v", at, p)
			}
		} else if !errors.Is(err, ErrSchema) {
			t.Fatalf("error %v is not ErrSchema", err)
		}
	})
}

func TestResultEqualNamesTheDifference(t *testing.T) {
	base := func() *Result {
		return &Result{Query: "q", Columns: []string{"country", "events", "share"}, RowsScanned: 10,
			Rows: [][]any{{"US", int64(5), 0.5}, {"DE", int64(3), 0.25}}}
	}
	if err := base().Equal(base()); err != nil {
		t.Fatalf("equal results: %v", err)
	}
	nan := base()
	nan.Rows[1][2] = math.NaN()
	nan2 := base()
	nan2.Rows[1][2] = math.NaN()
	if err := nan.Equal(nan2); err != nil {
		t.Errorf("NaN vs NaN: %v", err)
	}
	for _, c := range []struct {
		change func(r *Result)
		want   string
	}{
		{func(r *Result) { r.Query = "p" }, `query "q" vs "p"`},
		{func(r *Result) { r.Columns[1] = "n" }, `column 1 is "events" vs "n"`},
		{func(r *Result) { r.Columns = r.Columns[:2] }, "3 columns vs 2"},
		{func(r *Result) { r.RowsScanned = 11 }, "10 rows scanned vs 11"},
		{func(r *Result) { r.Rows = r.Rows[:1] }, "2 result rows vs 1"},
		{func(r *Result) { r.Rows[1][1] = int64(4) }, `row 1 (country="DE") column events: 3 vs 4`},
		{func(r *Result) { r.Rows[1][2] = math.Nextafter(0.25, 1) }, "column share: 0.25 vs 0.25000000000000006"},
		{func(r *Result) { r.Rows[0][1] = 5.0 }, "column events: 5 vs 5"},
		{func(r *Result) { r.Rows[0][0] = "GB" }, `column country: "US" vs "GB"`},
		{func(r *Result) { r.Rows[0] = r.Rows[0][:2] }, "row 0 has 3 cells vs 2"},
	} {
		o := base()
		c.change(o)
		err := base().Equal(o)
		if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want ErrMismatch mentioning %q", err, c.want)
		}
	}
	if err := (*Result)(nil).Equal(base()); !errors.Is(err, ErrMismatch) {
		t.Errorf("nil vs result: %v", err)
	}
	s := base().String()
	for _, want := range []string{"country", "events", "US", "0.500", "(q: 2 result rows, 10 rows scanned)"} {
		if !strings.Contains(s, want) {
			t.Errorf("String %q lacks %q", s, want)
		}
	}
}

// TestReferenceCatchesAWrongFastPath guards the oracle itself: a result
// with one cell changed is reported, so the reference comparison can fail.
func TestReferenceCatchesAWrongFastPath(t *testing.T) {
	paths := queryData(t, "none")
	got := runOverFiles(t, paths, "top_customers")
	got.Rows[3][2] = got.Rows[3][2].(float64) + 0.01
	want, err := Reference(paths, "top_customers")
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Equal(want); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "row 3") {
		t.Errorf("changed revenue not reported: %v", err)
	}
}

// BenchmarkQueries measures the query layer alone: the records are read
// into memory first, so only Execution.Add and Result are timed.
func BenchmarkQueries(b *testing.B) {
	const rows = 1 << 20
	paths := generated(b, GenOptions{Rows: rows, Files: 2, Seed: 3})
	p := paramsOfFiles(b, paths)
	var recs []arrow.RecordBatch
	for _, path := range paths {
		fb := openBatches(b, path, nil)
		for fb.Next() {
			r := fb.Record()
			r.Retain()
			recs = append(recs, r)
		}
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, q := range Queries() {
		b.Run("query="+q.Name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				e, err := NewExecution(q.Name, p)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs {
					if err := e.Add("bench", r); err != nil {
						b.Fatal(err)
					}
				}
				e.Result()
			}
			b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mrows/s")
		})
	}
}

func BenchmarkGenerate(b *testing.B) {
	for _, c := range []string{"none", "lz4", "zstd"} {
		b.Run("compression="+c, func(b *testing.B) {
			const rows = 1 << 20
			b.SetBytes(rows * 78)
			for i := 0; i < b.N; i++ {
				if _, err := Generate(b.TempDir(), GenOptions{Rows: rows, Files: 2, Compression: c}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestInt64Set: the bitmap and the map count alike, across the switch and
// at the ends of the int64 range (the window's arithmetic wraps).
func TestInt64Set(t *testing.T) {
	for _, c := range []struct {
		name string
		vals []int64
	}{
		{"dense", []int64{5, 6, 5, 7, 1 << 20, 5}},
		{"switch to map", []int64{10, 11, 10, 10 + setWindow, 11, 10 + setWindow, -3}},
		{"near max", []int64{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64}},
		{"near min", []int64{math.MinInt64, math.MinInt64 + 2, math.MinInt64}},
		{"wraps around", []int64{math.MaxInt64, math.MinInt64, math.MaxInt64 - 3, math.MinInt64 + 3}},
		{"far apart", []int64{0, math.MaxInt64, math.MinInt64, 0}},
	} {
		var s int64Set
		want := map[int64]bool{}
		for _, v := range c.vals {
			s.add(v)
			want[v] = true
			if s.len() != int64(len(want)) {
				t.Fatalf("%s: after %v: %d distinct, want %d", c.name, v, s.len(), len(want))
			}
		}
		if s.m != nil { // the map must hold exactly the values
			for v := range want {
				if _, ok := s.m[v]; !ok {
					t.Errorf("%s: map lacks %d", c.name, v)
				}
			}
		}
	}
}

// FuzzExecutionAdd feeds the queries records whose buffers hold arbitrary
// bytes (string offsets, dictionary indices, validity bits, values): every
// record is folded in or refused by the explicit checks, never by the
// panic safety net in addChecked.
func FuzzExecutionAdd(f *testing.F) {
	f.Add(uint8(4), []byte("\x00\x00\x00\x00\x05\x00\x00\x00\x09\x00\x00\x00"))
	f.Add(uint8(9), []byte{0xff, 0x7f, 0x00, 0x80, 0x01, 0x02, 0x03})
	f.Add(uint8(1), []byte{})
	f.Fuzz(func(t *testing.T, rows uint8, data []byte) {
		n := int(rows % 40)
		pos := 0
		take := func(k int) []byte { // the next k bytes of data, zeros past its end
			b := make([]byte, k)
			if pos < len(data) {
				copy(b, data[pos:])
			}
			pos += k
			return b
		}
		mem := memory.NewGoAllocator()
		rec, ok := func() (rec arrow.RecordBatch, ok bool) {
			defer func() {
				if recover() != nil { // arrow-go refused to build the arrays: arrowscan's to catch
					ok = false
				}
			}()
			fixed := func(t arrow.DataType, width int) arrow.Array {
				d := array.NewData(t, n, []*memory.Buffer{nil, memory.NewBufferBytes(take(n * width))}, nil, 0, 0)
				defer d.Release()
				return array.MakeFromData(d)
			}
			str := func(offsets, values []byte) arrow.Array {
				d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nil, memory.NewBufferBytes(offsets), memory.NewBufferBytes(values)}, nil, 0, 0)
				defer d.Release()
				return array.MakeFromData(d)
			}
			dict := func(t *arrow.DictionaryType, width int, values []string) arrow.Array {
				sb := array.NewStringBuilder(mem)
				defer sb.Release()
				sb.AppendValues(values, nil)
				dv := sb.NewArray()
				defer dv.Release()
				idx := fixed(t.IndexType, width)
				defer idx.Release()
				return array.NewDictionaryArray(t, idx, dv)
			}
			priceData := array.NewData(arrow.PrimitiveTypes.Float64, n, []*memory.Buffer{
				memory.NewBufferBytes(take((n + 7) / 8)), memory.NewBufferBytes(take(n * 8))}, nil, array.UnknownNullCount, 0)
			defer priceData.Release()
			uaValues := take(int(rows))
			cols := []arrow.Array{
				fixed(tsType, 8), fixed(arrow.PrimitiveTypes.Int64, 8), fixed(arrow.PrimitiveTypes.Int64, 8),
				dict(countryType, 2, countryCodes[:5]), dict(eventTypeType, 1, eventTypes),
				fixed(arrow.PrimitiveTypes.Float64, 8), fixed(arrow.PrimitiveTypes.Int64, 8), array.MakeFromData(priceData),
				fixed(arrow.PrimitiveTypes.Int32, 4), str(take((n+1)*4), uaValues),
			}
			defer func() {
				for _, c := range cols {
					c.Release()
				}
			}()
			return array.NewRecordBatch(Schema(), cols, int64(n)), true
		}()
		if !ok {
			return
		}
		defer rec.Release()
		for _, q := range Queries() {
			e, err := NewExecution(q.Name, Params{Start: math.MinInt64 / 2, End: math.MaxInt64 / 2})
			if err != nil {
				t.Fatal(err)
			}
			err = e.Add("fuzz", rec)
			if err != nil && strings.Contains(err.Error(), "panicked") {
				t.Fatalf("%s: the explicit checks missed a bad record: %v", q.Name, err)
			}
			if err == nil {
				e.Result()
			}
		}
	})
}
