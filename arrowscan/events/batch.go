package events

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// batchBuilder holds one record batch's columns as plain slices, reused from
// batch to batch, and wraps them as arrow arrays without copying. A record
// made by record aliases the slices: release it before the next reset.
type batchBuilder struct {
	n          int
	ts         []arrow.Timestamp
	customer   []int64
	session    []int64
	country    []int16
	eventType  []int8
	latency    []float64
	bytes      []int64
	price      []float64
	priceValid []byte // validity bitmap of price
	priceNulls int
	status     []int32
	uaOffsets  []int32
	uaData     []byte
}

func (b *batchBuilder) reset(n int) {
	b.n = 0
	b.ts = b.ts[:0]
	b.customer = b.customer[:0]
	b.session = b.session[:0]
	b.country = b.country[:0]
	b.eventType = b.eventType[:0]
	b.latency = b.latency[:0]
	b.bytes = b.bytes[:0]
	b.price = b.price[:0]
	b.priceNulls = 0
	b.status = b.status[:0]
	b.uaOffsets = append(b.uaOffsets[:0], 0)
	b.uaData = b.uaData[:0]
	if nb := int(bitutil.BytesForBits(int64(n))); cap(b.priceValid) < nb {
		b.priceValid = make([]byte, nb)
	} else {
		b.priceValid = b.priceValid[:nb]
		clear(b.priceValid)
	}
}

func (b *batchBuilder) append(r row) {
	b.ts = append(b.ts, arrow.Timestamp(r.ts))
	b.customer = append(b.customer, r.customer)
	b.session = append(b.session, r.session)
	b.country = append(b.country, r.country)
	b.eventType = append(b.eventType, r.eventType)
	b.latency = append(b.latency, r.latency)
	b.bytes = append(b.bytes, r.bytes)
	b.price = append(b.price, r.price)
	if r.hasPrice {
		bitutil.SetBit(b.priceValid, b.n)
	} else {
		b.priceNulls++
	}
	b.status = append(b.status, r.status)
	b.uaData = append(b.uaData, userAgents[r.userAgent]...)
	b.uaOffsets = append(b.uaOffsets, int32(len(b.uaData)))
	b.n++
}

// dictionaries are the value arrays of the two dictionary columns, shared
// by every batch of a file (arrow's file format allows one dictionary per
// field and file; the writer writes it once because it is the same array).
type dictionaries struct {
	country, eventType arrow.Array
}

func newDictionaries(mem memory.Allocator) dictionaries {
	build := func(values []string) arrow.Array {
		sb := array.NewStringBuilder(mem)
		defer sb.Release()
		sb.AppendValues(values, nil)
		return sb.NewArray()
	}
	return dictionaries{country: build(countryCodes), eventType: build(eventTypes)}
}

func (d dictionaries) release() {
	d.country.Release()
	d.eventType.Release()
}

// record wraps the builder's slices as a record of schema (the event schema
// with the file's metadata).
func (b *batchBuilder) record(schema *arrow.Schema, d dictionaries) arrow.RecordBatch {
	n := b.n
	fixed := func(t arrow.DataType, data []byte) arrow.Array {
		ad := array.NewData(t, n, []*memory.Buffer{nil, memory.NewBufferBytes(data)}, nil, 0, 0)
		defer ad.Release()
		return array.MakeFromData(ad)
	}
	dict := func(t *arrow.DictionaryType, indexData []byte, values arrow.Array) arrow.Array {
		idx := fixed(t.IndexType, indexData)
		defer idx.Release()
		return array.NewDictionaryArray(t, idx, values)
	}
	priceData := array.NewData(arrow.PrimitiveTypes.Float64, n,
		[]*memory.Buffer{memory.NewBufferBytes(b.priceValid), memory.NewBufferBytes(arrow.Float64Traits.CastToBytes(b.price))},
		nil, b.priceNulls, 0)
	defer priceData.Release()
	uaData := array.NewData(arrow.BinaryTypes.String, n,
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(b.uaOffsets)), memory.NewBufferBytes(b.uaData)},
		nil, 0, 0)
	defer uaData.Release()

	cols := []arrow.Array{
		fixed(tsType, arrow.TimestampTraits.CastToBytes(b.ts)),
		fixed(arrow.PrimitiveTypes.Int64, arrow.Int64Traits.CastToBytes(b.customer)),
		fixed(arrow.PrimitiveTypes.Int64, arrow.Int64Traits.CastToBytes(b.session)),
		dict(countryType, arrow.Int16Traits.CastToBytes(b.country), d.country),
		dict(eventTypeType, arrow.Int8Traits.CastToBytes(b.eventType), d.eventType),
		fixed(arrow.PrimitiveTypes.Float64, arrow.Float64Traits.CastToBytes(b.latency)),
		fixed(arrow.PrimitiveTypes.Int64, arrow.Int64Traits.CastToBytes(b.bytes)),
		array.MakeFromData(priceData),
		fixed(arrow.PrimitiveTypes.Int32, arrow.Int32Traits.CastToBytes(b.status)),
		array.MakeFromData(uaData),
	}
	rec := array.NewRecordBatch(schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}
