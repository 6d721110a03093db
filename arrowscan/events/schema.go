package events

import (
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Column names of the event schema, in schema order.
const (
	ColTS         = "ts"
	ColCustomerID = "customer_id"
	ColSessionID  = "session_id"
	ColCountry    = "country"
	ColEventType  = "event_type"
	ColLatencyMS  = "latency_ms"
	ColBytes      = "bytes"
	ColPrice      = "price"
	ColStatus     = "status"
	ColUserAgent  = "user_agent"
)

// Schema metadata keys written by Generate. The time range is what the
// queries derive their windows from (see Params).
const (
	MetaVersion   = "events.version"     // schema version, "1"
	MetaTSStart   = "events.ts_start_us" // every ts of the file is ≥ this (µs since the epoch)
	MetaTSEnd     = "events.ts_end_us"   // every ts of the file is < this
	MetaSeed      = "events.seed"        // GenOptions.Seed
	MetaRowsTotal = "events.rows_total"  // GenOptions.Rows of the whole data set
	MetaFileIndex = "events.file_index"  // this file's place in the data set, from 0
	MetaFiles     = "events.files"       // number of files of the data set
)

const schemaVersion = "1"

var (
	tsType        = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	countryType   = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
	eventTypeType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
)

// fields is the event schema; only price is nullable (null unless the event
// is a purchase).
var fields = []arrow.Field{
	{Name: ColTS, Type: tsType},
	{Name: ColCustomerID, Type: arrow.PrimitiveTypes.Int64},
	{Name: ColSessionID, Type: arrow.PrimitiveTypes.Int64},
	{Name: ColCountry, Type: countryType},
	{Name: ColEventType, Type: eventTypeType},
	{Name: ColLatencyMS, Type: arrow.PrimitiveTypes.Float64},
	{Name: ColBytes, Type: arrow.PrimitiveTypes.Int64},
	{Name: ColPrice, Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: ColStatus, Type: arrow.PrimitiveTypes.Int32},
	{Name: ColUserAgent, Type: arrow.BinaryTypes.String},
}

// Schema returns the event schema without metadata. The files Generate
// writes carry it with the Meta* keys.
func Schema() *arrow.Schema { return arrow.NewSchema(fields, nil) }

// fieldByName returns the schema's field called name.
func fieldByName(name string) (arrow.Field, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f, true
		}
	}
	return arrow.Field{}, false
}

// fileSchema is the schema of one generated file: the fields and the
// metadata that says where the file lies in the data set.
func fileSchema(o GenOptions, file int, tsStart, tsEnd int64) *arrow.Schema {
	md := arrow.NewMetadata(
		[]string{MetaVersion, MetaTSStart, MetaTSEnd, MetaSeed, MetaRowsTotal, MetaFileIndex, MetaFiles},
		[]string{schemaVersion, strconv.FormatInt(tsStart, 10), strconv.FormatInt(tsEnd, 10),
			strconv.FormatInt(o.Seed, 10), strconv.FormatInt(o.Rows, 10), strconv.Itoa(file), strconv.Itoa(o.Files)})
	return arrow.NewSchema(fields, &md)
}

// Params are what the queries' parameters are derived from: the time range
// [Start, End) of the data, in µs since the epoch. Windows are fixed
// fractions of it, so a query selects the same share of rows whatever the
// size of the data set.
type Params struct {
	Start, End int64
}

// String shows the range in UTC.
func (p Params) String() string {
	return fmt.Sprintf("[%s, %s)", time.UnixMicro(p.Start).UTC().Format(time.RFC3339Nano),
		time.UnixMicro(p.End).UTC().Format(time.RFC3339Nano))
}

// at returns the instant num/den of the way from Start to End.
func (p Params) at(num, den int64) int64 {
	return p.Start + mulDiv(uint64(p.End-p.Start), uint64(num), uint64(den))
}

// ParamsOf returns the union of the time ranges recorded in the schemas'
// metadata (MetaTSStart, MetaTSEnd); names[i] names schemas[i] in errors.
func ParamsOf(names []string, schemas []*arrow.Schema) (Params, error) {
	if len(schemas) == 0 {
		return Params{}, fmt.Errorf("%w: no files", ErrSchema)
	}
	var p Params
	for i, s := range schemas {
		name := fmt.Sprintf("schema %d", i)
		if i < len(names) {
			name = names[i]
		}
		start, end, err := timeRangeOf(s)
		if err != nil {
			return Params{}, fmt.Errorf("%s: %w", name, err)
		}
		if i == 0 || start < p.Start {
			p.Start = start
		}
		if i == 0 || end > p.End {
			p.End = end
		}
	}
	return p, nil
}

// timeRangeOf reads one schema's time-range metadata.
func timeRangeOf(s *arrow.Schema) (start, end int64, err error) {
	if s == nil {
		return 0, 0, fmt.Errorf("%w: no schema", ErrSchema)
	}
	md := s.Metadata()
	get := func(key string) (int64, error) {
		i := md.FindKey(key)
		if i < 0 {
			return 0, fmt.Errorf("%w: metadata key %s missing (not a file written by events.Generate)", ErrSchema, key)
		}
		v, err := strconv.ParseInt(md.Values()[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: metadata key %s: %q is not an integer", ErrSchema, key, md.Values()[i])
		}
		return v, nil
	}
	if start, err = get(MetaTSStart); err != nil {
		return 0, 0, err
	}
	if end, err = get(MetaTSEnd); err != nil {
		return 0, 0, err
	}
	if end <= start || end-start < 0 { // the second test catches overflow
		return 0, 0, fmt.Errorf("%w: metadata time range [%d, %d) is empty or too wide", ErrSchema, start, end)
	}
	return start, end, nil
}

// checkColumn checks that field f (found in file or record `where`) is
// the schema's column of that name with the schema's type.
func checkColumn(where string, f arrow.Field) error {
	want, ok := fieldByName(f.Name)
	if !ok {
		return fmt.Errorf("%s: %w: column %q is not in the event schema", where, ErrSchema, f.Name)
	}
	if !arrow.TypeEqual(f.Type, want.Type) {
		return fmt.Errorf("%s: %w: column %s has type %s, want %s", where, ErrSchema, f.Name, f.Type, want.Type)
	}
	return nil
}
