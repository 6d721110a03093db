package nexmark

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/ringstore/ringstore/state"
)

// Sink is the blackhole at the end of a query: it keeps the number of
// rows and an order-insensitive checksum of them (the sum and the xor of
// each row's FNV-1a hash), so outputs made in any order of keys compare
// equal when their rows do.
type Sink struct {
	Rows     uint64
	Sum, Xor uint64
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// Emit counts one output row.
func (s *Sink) Emit(row string) {
	h := uint64(fnvOffset)
	for i := 0; i < len(row); i++ {
		h = (h ^ uint64(row[i])) * fnvPrime
	}
	s.add(h)
}

// emitRow counts the row r holds.
func (s *Sink) emitRow(r *row) {
	h := uint64(fnvOffset)
	for _, c := range r.b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	s.add(h)
}

func (s *Sink) add(h uint64) { s.Rows, s.Sum, s.Xor = s.Rows+1, s.Sum+h, s.Xor^h }

// Add merges another sink's rows (the workers' sinks into one).
func (s *Sink) Add(o Sink) { s.Rows, s.Sum, s.Xor = s.Rows+o.Rows, s.Sum+o.Sum, s.Xor^o.Xor }

// Checksum is the sink as one string.
func (s Sink) Checksum() string { return fmt.Sprintf("%d:%016x:%016x", s.Rows, s.Sum, s.Xor) }

// row builds an output row: its columns in the SQL's SELECT order, joined
// by ','. BIGINT is decimal, TIMESTAMP(3) unix ms, DECIMAL(p, 3) has
// exactly three digits after the point, VARCHAR is as it is.
type row struct {
	b   []byte
	n   int  // columns so far
	own bool // b is an Out's memory (Out.row), given back when the row is emitted
}

func (r *row) sep() {
	if r.n > 0 {
		r.b = append(r.b, ',')
	}
	r.n++
}

func (r *row) int(v int64) *row  { r.sep(); r.b = strconv.AppendInt(r.b, v, 10); return r }
func (r *row) str(s string) *row { r.sep(); r.b = append(r.b, s...); return r }

// raw appends columns already joined by ',' (a row kept in state).
func (r *row) raw(cols []byte) *row { r.sep(); r.b = append(r.b, cols...); return r }

// euros is the SQL's 0.908 * price, a DECIMAL(23, 3): exact, in
// thousandths.
func (r *row) euros(price int64) *row {
	r.sep()
	v := price * 908
	r.b = strconv.AppendInt(r.b, v/1000, 10)
	f := v % 1000
	r.b = append(r.b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
	return r
}

func (r *row) bytes() []byte { return r.b }

// Query is one Nexmark query: which events it takes and under which
// partition keys (Keys), and its first stage (Open), run on each worker's
// state. A query whose result spans keys (the hot items of a window, the
// average of a category) has a Final stage: the first stage forwards
// records to it (Out.Forward), and it runs on one goroutine over them in
// event-time order, as a parallelism-1 operator after a shuffle would.
type Query struct {
	Name     string
	Stateful bool
	// Keys appends the partition keys an event is processed under to dst
	// and returns it: none for an event the query does not take, one for
	// most, two where an event belongs to two keys (q7: a bid at a window's
	// end is in the next window and also closes the one before). Events of
	// one key are processed in their order.
	Keys func(e Event, dst []int64) []int64
	// Open makes the first stage on a worker's state (nil for a stateless
	// query).
	Open  func(b *state.Backend) (Operator, error)
	Final *FinalOperator
}

// FinalOperator is a query's second stage. Its state is small (a few keys
// per window or category) and lives in memory.
type FinalOperator struct {
	Process func(r Record, s *memState, out *Out) error
	OnTimer func(ts int64, key []byte, s *memState, out *Out) error
}

// timed says whether a query whose first stage is op needs watermarks:
// op has timers, or the query a final stage.
func (q Query) timed(op Operator) bool {
	_, timers := op.(TimerOperator)
	return timers || q.Final != nil
}

// oneKey makes a Keys of a function that gives at most one key.
func oneKey(key func(e Event) (int64, bool)) func(Event, []int64) []int64 {
	return func(e Event, dst []int64) []int64 {
		if k, ok := key(e); ok {
			dst = append(dst, k)
		}
		return dst
	}
}

func i64(v int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(v))
	return b
}

func u64s(v ...int64) []byte {
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		b = binary.BigEndian.AppendUint64(b, uint64(x))
	}
	return b
}

// fromU64s reads n int64s from v, or says what is wrong with it.
func fromU64s(v []byte, n int, what string) ([]int64, error) {
	if len(v) < 8*n {
		return nil, damaged("", -1, "a stored %s of %d bytes, want at least %d", what, len(v), 8*n)
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(binary.BigEndian.Uint64(v[8*i:]))
	}
	return out, nil
}

// queries is the table of the queries this package runs, in order.
var queries = []Query{q0(), q1(), q2(), q3(), q4(), q5(), q7(), q8(), q9(), q10(), q11(), q12(), q13(), q14(), q15(), q16(), q17(), q18(), q19(), q20(), q21(), q22()}

// Lookup returns the query called name.
func Lookup(name string) (Query, bool) {
	for _, q := range queries {
		if q.Name == name {
			return q, true
		}
	}
	return Query{}, false
}

// QueryNames returns the names of the queries, in order (q0, q1, ...).
func QueryNames() []string {
	n := make([]string, len(queries))
	for i, q := range queries {
		n[i] = q.Name
	}
	return n
}

func bidKey(e Event) (int64, bool) {
	if e.Kind != KindBid {
		return 0, false
	}
	return e.Bid.Auction, true
}

func bidderKey(e Event) (int64, bool) {
	if e.Kind != KindBid {
		return 0, false
	}
	return e.Bid.Bidder, true
}

// personOrSeller partitions people by id and auctions by seller.
func personOrSeller(e Event) (int64, bool) {
	switch e.Kind {
	case KindPerson:
		return e.Person.ID, true
	case KindAuction:
		return e.Auction.Seller, true
	}
	return 0, false
}

// auctionOrBid partitions auctions and bids by auction id.
func auctionOrBid(e Event) (int64, bool) {
	switch e.Kind {
	case KindAuction:
		return e.Auction.ID, true
	case KindBid:
		return e.Bid.Auction, true
	}
	return 0, false
}

// bidRow appends a bid's columns in the order of the reference's bid
// view: auction, bidder, price, channel, url, dateTime, extra.
func (r *row) bidRow(b *Bid) *row {
	return r.int(b.Auction).int(b.Bidder).int(b.Price).str(b.Channel).str(b.URL).int(b.DateTime).str(b.Extra)
}
