package nexmark

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
)

// Store is what a query's operator keeps per key: values and lists by
// state name. Two stores run the same operators — one on package state
// (its mini-batches' reads in one kv.MultiGet), one on Go maps, the
// reference the first is checked against.
type Store interface {
	// Want declares a read of state name's entry for key in this batch.
	Want(name string, key []byte)
	Get(name string, key []byte) ([]byte, bool, error)
	Put(name string, key, value []byte)
	Delete(name string, key []byte)
	List(name string, key []byte) ([][]byte, error)
	Append(name string, key, item []byte) error
	// Timer sets an event-time timer: the query's OnTimer runs for key once
	// the watermark reaches ts. DeleteTimer drops one not yet fired.
	Timer(ts int64, key []byte)
	DeleteTimer(ts int64, key []byte)
}

// operatorStore is a Store as the runner drives it: reads declared with
// Want are made by load, writes are made durable-in-order by commit.
type operatorStore interface {
	Store
	load() error
	commit() error
	timers() *Timers
}

// Sink is the blackhole at the end of a query: it keeps the number of
// rows and an order-insensitive checksum of them (the sum and the xor of
// each row's FNV-1a hash), so outputs made in any order of keys compare
// equal when their rows do.
type Sink struct {
	Rows     uint64
	Sum, Xor uint64
}

// Emit counts one output row.
func (s *Sink) Emit(row string) {
	h := fnv.New64a()
	h.Write([]byte(row))
	v := h.Sum64()
	s.Rows++
	s.Sum += v
	s.Xor ^= v
}

// Add merges another sink's rows (the workers' sinks into one).
func (s *Sink) Add(o Sink) { s.Rows, s.Sum, s.Xor = s.Rows+o.Rows, s.Sum+o.Sum, s.Xor^o.Xor }

// Checksum is the sink as one string.
func (s Sink) Checksum() string { return fmt.Sprintf("%d:%016x:%016x", s.Rows, s.Sum, s.Xor) }

// Query is one Nexmark query: which events it takes and their partition
// key, what it reads for an event (Wants), and what it does with it
// (Process). Stateless queries want nothing.
//
// A query with windows sets timers (Store.Timer); OnTimer runs each once
// the watermark passes it, its reads declared by TimerWants and made in one
// Load per round of timers. A query whose result spans keys (the hot items
// of a window, the average of a category) has a Final stage: the first
// stage forwards records to it (Out.Forward), and it runs on one goroutine
// over them in event-time order, as a parallelism-1 operator after a
// shuffle would.
type Query struct {
	Name     string
	Stateful bool
	// States are the query's state names and whether each is a list.
	States map[string]bool
	// Key returns the partition key of an event the query takes, or false.
	Key        func(e Event) (int64, bool)
	Wants      func(e Event, s Store)
	Process    func(e Event, s Store, out *Out) error
	TimerWants func(ts int64, key []byte, s Store)
	OnTimer    func(ts int64, key []byte, s Store, out *Out) error
	Final      *FinalOperator
}

// FinalOperator is a query's second stage. Its state is small (a few keys
// per window or category) and lives in memory.
type FinalOperator struct {
	Process func(r Record, s Store, out *Out) error
	OnTimer func(ts int64, key []byte, s Store, out *Out) error
}

// timed says whether the query needs watermarks.
func (q Query) timed() bool { return q.OnTimer != nil || q.Final != nil }

// advance fires the operator's timers due at watermark wm, in rounds: the
// reads of a round's timers in one load, their writes in one commit.
func (q Query) advance(s operatorStore, wm int64, out *Out) error {
	for {
		due := s.timers().due(wm)
		if len(due) == 0 {
			return nil
		}
		if q.TimerWants != nil {
			for _, t := range due {
				q.TimerWants(t.ts, []byte(t.key), s)
			}
			if err := s.load(); err != nil {
				return err
			}
		}
		for _, t := range due {
			if err := q.OnTimer(t.ts, []byte(t.key), s, out); err != nil {
				return fmt.Errorf("nexmark: %s, timer at %d: %w", q.Name, t.ts, err)
			}
		}
		if err := s.commit(); err != nil {
			return err
		}
	}
}

func i64(v int64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, uint64(v))
	return b
}

func key2(a, b int64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, uint64(a))
	binary.BigEndian.PutUint64(k[8:], uint64(b))
	return k
}

// Queries are the queries this package runs, by name.
var Queries = map[string]Query{}

// QueryNames returns the names of Queries in order (q0, q1, ...).
func QueryNames() []string {
	var n []string
	for k := range Queries {
		n = append(n, k)
	}
	sort.Slice(n, func(i, j int) bool {
		var a, b int
		fmt.Sscanf(n[i], "q%d", &a)
		fmt.Sscanf(n[j], "q%d", &b)
		return a < b
	})
	return n
}

func bidKey(e Event) (int64, bool) {
	if e.Kind != KindBid {
		return 0, false
	}
	return e.Bid.Auction, true
}

func noWants(Event, Store) {}

func init() {
	// q0: pass-through, the cost of reading the stream.
	Queries["q0"] = Query{Name: "q0", Key: bidKey, Wants: noWants, Process: func(e Event, _ Store, out *Out) error {
		b := e.Bid
		out.Emit(fmt.Sprintf("%d,%d,%d,%s,%s,%d", b.Auction, b.Bidder, b.Price, b.Channel, b.URL, b.DateTime))
		return nil
	}}
	// q1: currency conversion, dollars to euros.
	Queries["q1"] = Query{Name: "q1", Key: bidKey, Wants: noWants, Process: func(e Event, _ Store, out *Out) error {
		b := e.Bid
		out.Emit(fmt.Sprintf("%d,%d,%d,%d", b.Auction, b.Bidder, b.Price*908/1000, b.DateTime))
		return nil
	}}
	// q2: selection, the bids of some auctions.
	Queries["q2"] = Query{Name: "q2", Key: bidKey, Wants: noWants, Process: func(e Event, _ Store, out *Out) error {
		if e.Bid.Auction%123 == 0 {
			out.Emit(fmt.Sprintf("%d,%d", e.Bid.Auction, e.Bid.Price))
		}
		return nil
	}}
	// q3: the incremental join of people in OR, ID or CA with the
	// auctions they sell in category 10; a person is kept (and the
	// auctions that came before their seller) for as long as the run
	// lasts: unbounded retention, as the SQL's regular join.
	Queries["q3"] = Query{Name: "q3", Stateful: true, States: map[string]bool{"person": false, "pending": true},
		Key: personOrSeller,
		Wants: func(e Event, s Store) {
			switch e.Kind {
			case KindPerson:
				s.Want("pending", i64(e.Person.ID))
			case KindAuction:
				s.Want("person", i64(e.Auction.Seller))
			}
		},
		Process: func(e Event, s Store, out *Out) error {
			switch e.Kind {
			case KindPerson:
				p := e.Person
				if p.State != "OR" && p.State != "ID" && p.State != "CA" {
					return nil
				}
				row := p.Name + "," + p.City + "," + p.State
				s.Put("person", i64(p.ID), []byte(row))
				pending, err := s.List("pending", i64(p.ID))
				if err != nil {
					return err
				}
				for _, a := range pending {
					out.Emit(row + "," + string(a))
				}
				if len(pending) > 0 {
					s.Delete("pending", i64(p.ID))
				}
			case KindAuction:
				a := e.Auction
				if a.Category != 10 {
					return nil
				}
				person, ok, err := s.Get("person", i64(a.Seller))
				if err != nil {
					return err
				}
				if ok {
					out.Emit(string(person) + "," + fmt.Sprint(a.ID))
				} else {
					return s.Append("pending", i64(a.Seller), []byte(fmt.Sprint(a.ID)))
				}
			}
			return nil
		}}
	// q17: per auction and day, the number of bids in three price ranks and
	// the min, max, sum and average price, updated with every bid.
	Queries["q17"] = Query{Name: "q17", Stateful: true, States: map[string]bool{"day": false},
		Key:   bidKey,
		Wants: func(e Event, s Store) { s.Want("day", key2(e.Bid.Auction, e.Bid.DateTime/86_400_000)) },
		Process: func(e Event, s Store, out *Out) error {
			b := e.Bid
			k := key2(b.Auction, b.DateTime/86_400_000)
			v, ok, err := s.Get("day", k)
			if err != nil {
				return err
			}
			var acc [7]int64 // total, rank1, rank2, rank3, min, max, sum
			if ok {
				if len(v) != 56 {
					return fmt.Errorf("nexmark: q17: a stored accumulator of %d bytes", len(v))
				}
				for i := range acc {
					acc[i] = int64(binary.BigEndian.Uint64(v[8*i:]))
				}
			} else {
				acc[4] = b.Price
			}
			acc[0]++
			switch {
			case b.Price < 10_000:
				acc[1]++
			case b.Price < 1_000_000:
				acc[2]++
			default:
				acc[3]++
			}
			acc[4], acc[5], acc[6] = min(acc[4], b.Price), max(acc[5], b.Price), acc[6]+b.Price
			nv := make([]byte, 0, 56)
			for _, x := range acc {
				nv = binary.BigEndian.AppendUint64(nv, uint64(x))
			}
			s.Put("day", k, nv)
			out.Emit(fmt.Sprintf("%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", b.Auction, b.DateTime/86_400_000, acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6]/acc[0], acc[6]))
			return nil
		}}
	// q18: the last bid of each bidder on each auction (a deduplication
	// keeping the latest by event time).
	Queries["q18"] = Query{Name: "q18", Stateful: true, States: map[string]bool{"last": false},
		Key:   bidderKey,
		Wants: func(e Event, s Store) { s.Want("last", key2(e.Bid.Bidder, e.Bid.Auction)) },
		Process: func(e Event, s Store, out *Out) error {
			b := e.Bid
			k := key2(b.Bidder, b.Auction)
			v, ok, err := s.Get("last", k)
			if err != nil {
				return err
			}
			if ok && int64(binary.BigEndian.Uint64(v)) > b.DateTime {
				return nil
			}
			s.Put("last", k, append(i64(b.DateTime), i64(b.Price)...))
			out.Emit(fmt.Sprintf("%d,%d,%d,%d", b.Auction, b.Bidder, b.Price, b.DateTime))
			return nil
		}}
	// q20: bids joined with their auction's item, for auctions in category
	// 10. Every auction is kept (its category decides later bids); a bid
	// that names an auction not yet seen waits for it.
	Queries["q20"] = Query{Name: "q20", Stateful: true, States: map[string]bool{"auction": false, "early": true},
		Key: auctionOrBid,
		Wants: func(e Event, s Store) {
			switch e.Kind {
			case KindAuction:
				s.Want("early", i64(e.Auction.ID))
			case KindBid:
				s.Want("auction", i64(e.Bid.Auction))
			}
		},
		Process: func(e Event, s Store, out *Out) error {
			switch e.Kind {
			case KindAuction:
				a := e.Auction
				item := fmt.Sprintf("%d|%s|%d", a.Category, a.ItemName, a.Seller)
				s.Put("auction", i64(a.ID), []byte(item))
				early, err := s.List("early", i64(a.ID))
				if err != nil {
					return err
				}
				for _, b := range early {
					emitQ20(out, item, string(b))
				}
				if len(early) > 0 {
					s.Delete("early", i64(a.ID))
				}
			case KindBid:
				b := e.Bid
				bid := fmt.Sprintf("%d,%d,%d,%d", b.Auction, b.Bidder, b.Price, b.DateTime)
				item, ok, err := s.Get("auction", i64(b.Auction))
				if err != nil {
					return err
				}
				if !ok {
					return s.Append("early", i64(b.Auction), []byte(bid))
				}
				emitQ20(out, string(item), bid)
			}
			return nil
		}}
}

func emitQ20(out *Out, item, bid string) {
	if strings.HasPrefix(item, "10|") {
		out.Emit(bid + "," + item)
	}
}
