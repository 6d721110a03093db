package nexmark

import (
	"encoding/binary"
	"fmt"
)

// The queries over windows, with timers: q5 (hopping, with a final
// stage), q7, q8 and q12 (tumbling), q11 (sessions). Windows are aligned
// to the epoch, [start, end); each emits once, when the watermark passes
// it.

const (
	tumble  = 10_000 // q7, q8, q12: tumbling windows of 10 s
	hopSize = 10_000 // q5: windows of 10 s every 2 s
	hopStep = 2_000
	gap     = 10_000 // q11: a session ends 10 s after its last bid
)

// tumbleEnd is the end (exclusive) of the tumbling window of size that
// holds ts.
func tumbleEnd(ts, size int64) int64 { return (ts/size + 1) * size }

// q5: hot items: in each window of 10 s (every 2 s), the auctions with
// the most bids, SELECT auction, num. The first stage (by auction)
// counts an auction's bids per window and forwards the count when the
// window closes; the final stage keeps each window's highest count and
// its auctions and emits them once every worker has passed the window.
func q5() Query {
	return Query{Name: "q5", Stateful: true, States: map[string]bool{"count": false},
		Keys: oneKey(bidKey),
		Wants: func(e Event, _ int64, s Store) {
			for end := range hopEnds(e.Bid.DateTime) {
				s.Want("count", key2(e.Bid.Auction, end))
			}
		},
		Process: func(e Event, _ int64, s Store, out *Out) error {
			for end := range hopEnds(e.Bid.DateTime) {
				if err := countInWindow(s, key2(e.Bid.Auction, end), end); err != nil {
					return err
				}
			}
			return nil
		},
		TimerWants: func(_ int64, key []byte, s Store) { s.Want("count", key) },
		OnTimer: func(ts int64, key []byte, s Store, out *Out) error {
			n, ok, err := takeCount(s, key)
			if err != nil || !ok {
				return err
			}
			out.Forward(ts, append(key[:8:8], i64(n)...)) // auction, count
			return nil
		},
		Final: &FinalOperator{
			Process: func(r Record, s Store, out *Out) error {
				f, err := fromU64s(r.Data, 2, "q5 record")
				if err != nil {
					return err
				}
				w := i64(r.TS)
				v, ok, _ := s.Get("window", w) // the highest count, then its auctions
				switch {
				case !ok || int64(binary.BigEndian.Uint64(v)) < f[1]:
					s.Put("window", w, u64s(f[1], f[0]))
				case int64(binary.BigEndian.Uint64(v)) == f[1]:
					s.Put("window", w, append(v, i64(f[0])...))
				}
				s.Timer(r.TS, w)
				return nil
			},
			OnTimer: func(ts int64, key []byte, s Store, out *Out) error {
				v, ok, _ := s.Get("window", key)
				if !ok {
					return nil
				}
				s.Delete("window", key)
				f, err := fromU64s(v, len(v)/8, "q5 window")
				if err != nil {
					return err
				}
				for _, a := range f[1:] {
					var r row
					out.emitRow(r.int(a).int(f[0]))
				}
				return nil
			}},
	}
}

// q7: the highest bids of each tumbling window of 10 s: SELECT
// B.auction, B.price, B.bidder, B.dateTime, B.extra of every bid whose
// price is the highest of a window and whose dateTime is BETWEEN the
// window's end - 10 s AND its end — both ends included, so a bid at
// exactly a window's end is also a candidate of the window it closes
// (without counting for its maximum). The window's end is the key (as
// the SQL's GROUP BY window): a window's bids go to one worker, and a
// bid at a window's end goes to that window's worker too. Emitted when
// the watermark reaches the window's end.
func q7() Query {
	return Query{Name: "q7", Stateful: true, States: map[string]bool{"max": false, "bids": true},
		Keys: func(e Event, dst []int64) []int64 {
			if e.Kind != KindBid {
				return dst
			}
			dst = append(dst, tumbleEnd(e.Bid.DateTime, tumble))
			if e.Bid.DateTime%tumble == 0 {
				dst = append(dst, e.Bid.DateTime)
			}
			return dst
		},
		Wants: func(e Event, end int64, s Store) {
			s.Want("max", i64(end))
			s.Want("bids", i64(end))
		},
		Process: func(e Event, end int64, s Store, out *Out) error {
			b := e.Bid
			w := i64(end)
			v, ok, err := s.Get("max", w)
			if err != nil {
				return err
			}
			var r row
			r.int(b.Auction).int(b.Price).int(b.Bidder).int(b.DateTime).str(b.Extra)
			if b.DateTime == end { // a candidate of the window it closes
				if ok && int64(binary.BigEndian.Uint64(v)) == b.Price {
					return s.Append("bids", w, r.b)
				}
				return nil
			}
			switch {
			case !ok || int64(binary.BigEndian.Uint64(v)) < b.Price:
				s.Put("max", w, i64(b.Price))
				s.Delete("bids", w)
				s.Timer(end, w)
			case int64(binary.BigEndian.Uint64(v)) > b.Price:
				return nil
			}
			return s.Append("bids", w, r.b)
		},
		TimerWants: func(_ int64, key []byte, s Store) { s.Want("bids", key) },
		OnTimer: func(_ int64, key []byte, s Store, out *Out) error {
			bids, err := s.List("bids", key)
			if err != nil {
				return err
			}
			for _, b := range bids {
				out.emitRow(&row{b: b})
			}
			s.Delete("bids", key)
			s.Delete("max", key)
			return nil
		}}
}

// q8: new users: SELECT P.id, P.name, P.starttime of the people who
// opened an auction in the tumbling window of 10 s in which they
// registered, emitted when the window closes.
func q8() Query {
	return Query{Name: "q8", Stateful: true, States: map[string]bool{"person": false, "seller": false},
		Keys:  oneKey(personOrSeller),
		Wants: noWants,
		Process: func(e Event, _ int64, s Store, out *Out) error {
			end := tumbleEnd(e.Time(), tumble)
			if e.Kind == KindPerson {
				k := key2(e.Person.ID, end)
				s.Put("person", k, []byte(e.Person.Name))
				s.Timer(end-1, k)
			} else {
				k := key2(e.Auction.Seller, end)
				s.Put("seller", k, []byte{1})
				s.Timer(end-1, k)
			}
			return nil
		},
		TimerWants: func(_ int64, key []byte, s Store) {
			s.Want("person", key)
			s.Want("seller", key)
		},
		OnTimer: func(ts int64, key []byte, s Store, out *Out) error {
			name, isPerson, err := s.Get("person", key)
			if err != nil {
				return err
			}
			_, isSeller, err := s.Get("seller", key)
			if err != nil {
				return err
			}
			if isPerson && isSeller {
				var r row
				out.emitRow(r.int(int64(binary.BigEndian.Uint64(key))).str(string(name)).int(ts + 1 - tumble))
			}
			s.Delete("person", key)
			s.Delete("seller", key)
			return nil
		}}
}

// q11: user sessions: per bidder, SELECT bidder, count(*),
// SESSION_START, SESSION_END with a gap of 10 s. As Flink merges
// session windows ([t, t + 10 s) per bid, merged where they overlap or
// touch), a bid at most 10 s after the session's last continues it; the
// session ends 10 s after its last bid and is emitted when the
// watermark passes that, or when a later bid starts the next.
func q11() Query {
	return Query{Name: "q11", Stateful: true, States: map[string]bool{"session": false},
		Keys:  oneKey(bidderKey),
		Wants: func(e Event, _ int64, s Store) { s.Want("session", i64(e.Bid.Bidder)) },
		Process: func(e Event, _ int64, s Store, out *Out) error {
			b := e.Bid
			k := i64(b.Bidder)
			v, ok, err := s.Get("session", k)
			if err != nil {
				return err
			}
			sess := []int64{b.DateTime, b.DateTime, 0} // start, last bid, bids
			if ok {
				old, err := fromU64s(v, 3, "session")
				if err != nil {
					return err
				}
				s.DeleteTimer(old[1]+gap-1, k)
				if b.DateTime <= old[1]+gap {
					sess = []int64{old[0], max(old[1], b.DateTime), old[2]}
				} else {
					emitSession(out, b.Bidder, old)
				}
			}
			sess[2]++
			s.Put("session", k, u64s(sess...))
			s.Timer(sess[1]+gap-1, k)
			return nil
		},
		TimerWants: func(_ int64, key []byte, s Store) { s.Want("session", key) },
		OnTimer: func(ts int64, key []byte, s Store, out *Out) error {
			v, ok, err := s.Get("session", key)
			if err != nil || !ok {
				return err
			}
			sess, err := fromU64s(v, 3, "session")
			if err != nil {
				return err
			}
			if sess[1]+gap-1 != ts {
				return nil // a later bid moved the session's end
			}
			emitSession(out, int64(binary.BigEndian.Uint64(key)), sess)
			s.Delete("session", key)
			return nil
		}}
}

// q12: SELECT bidder, count(*), window_start, window_end per bidder in
// tumbling windows of 10 s of processing time (PROCTIME()). The
// runner's processing time is the source's ingestion clock, which
// advances with the event id at the generator's rate, so the output
// can be checked: on this generator it equals event time.
func q12() Query {
	return Query{Name: "q12", Stateful: true, States: map[string]bool{"count": false},
		Keys: oneKey(bidderKey),
		Wants: func(e Event, _ int64, s Store) {
			s.Want("count", key2(e.Bid.Bidder, tumbleEnd(ingestTime(e), tumble)))
		},
		Process: func(e Event, _ int64, s Store, out *Out) error {
			end := tumbleEnd(ingestTime(e), tumble)
			return countInWindow(s, key2(e.Bid.Bidder, end), end)
		},
		TimerWants: func(_ int64, key []byte, s Store) { s.Want("count", key) },
		OnTimer: func(ts int64, key []byte, s Store, out *Out) error {
			n, ok, err := takeCount(s, key)
			if err != nil || !ok {
				return err
			}
			var r row
			out.emitRow(r.int(int64(binary.BigEndian.Uint64(key))).int(n).int(ts + 1 - tumble).int(ts + 1))
			return nil
		}}
}

// countInWindow adds one to the count of key (its window ending at end)
// and sets the timer that closes the window.
func countInWindow(s Store, key []byte, end int64) error {
	v, ok, err := s.Get("count", key)
	if err != nil {
		return err
	}
	n := int64(0)
	if ok {
		if len(v) != 8 {
			return fmt.Errorf("a stored count of %d bytes", len(v))
		}
		n = int64(binary.BigEndian.Uint64(v))
	}
	s.Put("count", key, i64(n+1))
	s.Timer(end-1, key)
	return nil
}

// takeCount returns the count of key and clears it (its window closed).
func takeCount(s Store, key []byte) (int64, bool, error) {
	v, ok, err := s.Get("count", key)
	if err != nil || !ok {
		return 0, false, err
	}
	s.Delete("count", key)
	if len(v) != 8 {
		return 0, false, fmt.Errorf("a stored count of %d bytes", len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), true, nil
}

// hopEnds yields the ends of q5's windows that hold ts, earliest first.
func hopEnds(ts int64) func(func(int64) bool) {
	return func(yield func(int64) bool) {
		first := (ts/hopStep)*hopStep + hopStep // the first window end after ts
		for end := first; end-hopSize <= ts; end += hopStep {
			if !yield(end) {
				return
			}
		}
	}
}

func emitSession(out *Out, bidder int64, sess []int64) {
	var r row
	out.emitRow(r.int(bidder).int(sess[2]).int(sess[0]).int(sess[1] + gap))
}

// ingestTime is when the source took the event in, on its clock.
func ingestTime(e Event) int64 { return e.Time() }
