package nexmark

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"
)

// The queries with joins over windows, timers and final stages: q4, q5,
// q7, q8, q9, q11, q12 (and q10, a projection with partition columns).

const (
	tumble  = 10_000 // q7, q8, q12: tumbling windows of 10 s
	hopSize = 10_000 // q5: windows of 10 s every 2 s
	hopStep = 2_000
	gap     = 10_000 // q11: a session ends after 10 s without a bid
)

// tumbleEnd is the end (exclusive) of the tumbling window of size that
// holds ts.
func tumbleEnd(ts, size int64) int64 { return (ts/size + 1) * size }

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
		return nil, fmt.Errorf("a stored %s of %d bytes, want at least %d", what, len(v), 8*n)
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(binary.BigEndian.Uint64(v[8*i:]))
	}
	return out, nil
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

func wantAuctionOrBid(e Event, s Store) {
	switch e.Kind {
	case KindAuction:
		s.Want("early", i64(e.Auction.ID))
		s.Want("best", i64(e.Auction.ID))
	case KindBid:
		s.Want("auction", i64(e.Bid.Auction))
		s.Want("best", i64(e.Bid.Auction))
	}
}

// auctionBids is the join of q4 and q9: an auction with the bids on it
// made between its start and its expiry, regular-join retention (an auction
// is kept for the run; a bid that comes before its auction waits in
// "early"). Of the joined bids it keeps the best — the highest price, the
// earlier on a tie — in "best", and calls better with the old best (nil
// for none) and the new one each time it changes.
func auctionBids(e Event, s Store, better func(auction []int64, row string, old []int64, bid []int64) error) error {
	// "auction": dateTime, expires, category, then the auction's row.
	// "best" and "early" items: price, dateTime, bidder.
	join := func(auction []int64, row string, bid []int64) error {
		if bid[1] < auction[0] || bid[1] > auction[1] {
			return nil
		}
		v, ok, err := s.Get("best", i64(e.key()))
		if err != nil {
			return err
		}
		var old []int64
		if ok {
			if old, err = fromU64s(v, 3, "best bid"); err != nil {
				return err
			}
			if bid[0] < old[0] || bid[0] == old[0] && bid[1] >= old[1] {
				return nil
			}
		}
		s.Put("best", i64(e.key()), u64s(bid...))
		return better(auction, row, old, bid)
	}
	switch e.Kind {
	case KindAuction:
		a := e.Auction
		row := fmt.Sprintf("%d,%s,%s,%d,%d,%d,%d,%d,%d", a.ID, a.ItemName, a.Description, a.InitialBid, a.Reserve, a.DateTime, a.Expires, a.Seller, a.Category)
		auction := []int64{a.DateTime, a.Expires, a.Category}
		s.Put("auction", i64(a.ID), append(u64s(auction...), row...))
		early, err := s.List("early", i64(a.ID))
		if err != nil {
			return err
		}
		for _, b := range early {
			bid, err := fromU64s(b, 3, "waiting bid")
			if err != nil {
				return err
			}
			if err := join(auction, row, bid); err != nil {
				return err
			}
		}
		if len(early) > 0 {
			s.Delete("early", i64(a.ID))
		}
	case KindBid:
		b := e.Bid
		bid := []int64{b.Price, b.DateTime, b.Bidder}
		v, ok, err := s.Get("auction", i64(b.Auction))
		if err != nil {
			return err
		}
		if !ok {
			return s.Append("early", i64(b.Auction), u64s(bid...))
		}
		auction, err := fromU64s(v, 3, "auction")
		if err != nil {
			return err
		}
		return join(auction, string(v[24:]), bid)
	}
	return nil
}

// key is the auction an auction or bid event is about.
func (e Event) key() int64 {
	if e.Kind == KindAuction {
		return e.Auction.ID
	}
	return e.Bid.Auction
}

func init() {
	// q4: the average closing price per category: per auction the highest
	// bid made while it ran (updated as bids come), and per category the
	// average of those maxima, emitted with every change. The first stage
	// (by auction) forwards each change of an auction's maximum — its
	// category, the old maximum (if any) and the new — to the final stage,
	// which keeps a sum and count per category.
	Queries["q4"] = Query{Name: "q4", Stateful: true, States: map[string]bool{"auction": false, "best": false, "early": true},
		Key: auctionOrBid, Wants: wantAuctionOrBid,
		Process: func(e Event, s Store, out *Out) error {
			return auctionBids(e, s, func(auction []int64, _ string, old, bid []int64) error {
				had, was := int64(0), int64(0)
				if old != nil {
					had, was = 1, old[0]
				}
				out.Forward(max(e.Time(), bid[1]), u64s(auction[2], had, was, bid[0]))
				return nil
			})
		},
		Final: &FinalOperator{Process: func(r Record, s Store, out *Out) error {
			f, err := fromU64s(r.Data, 4, "q4 record")
			if err != nil {
				return err
			}
			cat := i64(f[0])
			v, ok, _ := s.Get("category", cat)
			acc := []int64{0, 0} // sum, count
			if ok {
				if acc, err = fromU64s(v, 2, "category average"); err != nil {
					return err
				}
			}
			if f[1] == 1 {
				acc[0] -= f[2]
			} else {
				acc[1]++
			}
			acc[0] += f[3]
			s.Put("category", cat, u64s(acc...))
			out.Emit(fmt.Sprintf("%d,%d", f[0], acc[0]/acc[1]))
			return nil
		}}}

	// q9: the winning bid of each auction: its highest bid (the earlier on
	// a tie) made while it ran, emitted with the auction's row each time it
	// changes.
	Queries["q9"] = Query{Name: "q9", Stateful: true, States: map[string]bool{"auction": false, "best": false, "early": true},
		Key: auctionOrBid, Wants: wantAuctionOrBid,
		Process: func(e Event, s Store, out *Out) error {
			return auctionBids(e, s, func(_ []int64, row string, _, bid []int64) error {
				out.Emit(fmt.Sprintf("%s,%d,%d,%d", row, bid[0], bid[1], bid[2]))
				return nil
			})
		}}

	// q5: hot items: in each window of 10 s (every 2 s), the auctions with
	// the most bids. The first stage (by auction) counts an auction's bids
	// per window and forwards the count when the window closes; the final
	// stage keeps each window's highest count and its auctions and emits
	// them once every worker has passed the window.
	Queries["q5"] = Query{Name: "q5", Stateful: true, States: map[string]bool{"count": false},
		Key: bidKey,
		Wants: func(e Event, s Store) {
			for end := range hopEnds(e.Bid.DateTime) {
				s.Want("count", key2(e.Bid.Auction, end))
			}
		},
		Process: func(e Event, s Store, out *Out) error {
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
					out.Emit(fmt.Sprintf("%d,%d,%d", a, f[0], ts+1))
				}
				return nil
			}},
	}

	// q7: the highest bids of each tumbling window of 10 s: every bid at
	// the window's highest price, emitted when the window closes. The
	// window is the key (as the SQL's GROUP BY window does): a window's
	// bids go to one worker.
	Queries["q7"] = Query{Name: "q7", Stateful: true, States: map[string]bool{"max": false, "bids": true},
		Key: func(e Event) (int64, bool) {
			if e.Kind != KindBid {
				return 0, false
			}
			return tumbleEnd(e.Bid.DateTime, tumble), true
		},
		Wants: func(e Event, s Store) {
			s.Want("max", i64(tumbleEnd(e.Bid.DateTime, tumble)))
			s.Want("bids", i64(tumbleEnd(e.Bid.DateTime, tumble)))
		},
		Process: func(e Event, s Store, out *Out) error {
			b := e.Bid
			w := i64(tumbleEnd(b.DateTime, tumble))
			v, ok, err := s.Get("max", w)
			if err != nil {
				return err
			}
			row := []byte(fmt.Sprintf("%d,%d,%d,%d,%s", b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra))
			switch {
			case !ok || int64(binary.BigEndian.Uint64(v)) < b.Price:
				s.Put("max", w, i64(b.Price))
				s.Delete("bids", w)
				s.Timer(tumbleEnd(b.DateTime, tumble)-1, w)
			case int64(binary.BigEndian.Uint64(v)) > b.Price:
				return nil
			}
			return s.Append("bids", w, row)
		},
		TimerWants: func(_ int64, key []byte, s Store) { s.Want("bids", key) },
		OnTimer: func(_ int64, key []byte, s Store, out *Out) error {
			bids, err := s.List("bids", key)
			if err != nil {
				return err
			}
			for _, b := range bids {
				out.Emit(string(b))
			}
			s.Delete("bids", key)
			s.Delete("max", key)
			return nil
		}}

	// q8: new users: people who opened an auction in the tumbling window of
	// 10 s in which they registered, emitted when the window closes.
	Queries["q8"] = Query{Name: "q8", Stateful: true, States: map[string]bool{"person": false, "seller": false},
		Key:   personOrSeller,
		Wants: noWants,
		Process: func(e Event, s Store, out *Out) error {
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
				out.Emit(fmt.Sprintf("%d,%s,%d", int64(binary.BigEndian.Uint64(key)), name, ts+1-tumble))
			}
			s.Delete("person", key)
			s.Delete("seller", key)
			return nil
		}}

	// q10: every bid with the partition columns of the file it would be
	// logged to (its date and its hour and minute); the rows go to the
	// sink as every other query's.
	Queries["q10"] = Query{Name: "q10", Key: bidKey, Wants: noWants, Process: func(e Event, _ Store, out *Out) error {
		b := e.Bid
		out.Emit(fmt.Sprintf("%d,%d,%d,%s,%d,%s,%s,%s", b.Auction, b.Bidder, b.Price, b.Channel, b.DateTime, b.Extra, dayOf(b.DateTime), hourMinuteOf(b.DateTime)))
		return nil
	}}

	// q11: user sessions: per bidder, the bids of each session (a run of
	// bids with less than 10 s between them), emitted when the session
	// ends: after 10 s of watermark without a bid, or when a bid comes
	// later than that.
	Queries["q11"] = Query{Name: "q11", Stateful: true, States: map[string]bool{"session": false},
		Key:   bidderKey,
		Wants: func(e Event, s Store) { s.Want("session", i64(e.Bid.Bidder)) },
		Process: func(e Event, s Store, out *Out) error {
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
				if b.DateTime < old[1]+gap {
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

	// q12: bids per bidder in tumbling windows of 10 s of processing time.
	// The runner's processing time is the source's ingestion clock, which
	// advances with the event id at the generator's rate (so the output can
	// be checked); on this generator it equals event time.
	Queries["q12"] = Query{Name: "q12", Stateful: true, States: map[string]bool{"count": false},
		Key: bidderKey,
		Wants: func(e Event, s Store) {
			s.Want("count", key2(e.Bid.Bidder, tumbleEnd(ingestTime(e), tumble)))
		},
		Process: func(e Event, s Store, out *Out) error {
			end := tumbleEnd(ingestTime(e), tumble)
			return countInWindow(s, key2(e.Bid.Bidder, end), end)
		},
		TimerWants: func(_ int64, key []byte, s Store) { s.Want("count", key) },
		OnTimer: func(ts int64, key []byte, s Store, out *Out) error {
			n, ok, err := takeCount(s, key)
			if err != nil || !ok {
				return err
			}
			out.Emit(fmt.Sprintf("%d,%d,%d,%d", int64(binary.BigEndian.Uint64(key)), n, ts+1-tumble, ts+1))
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
	out.Emit(strconv.FormatInt(bidder, 10) + "," + strconv.FormatInt(sess[2], 10) + "," + strconv.FormatInt(sess[0], 10) + "," + strconv.FormatInt(sess[1]+gap, 10))
}

// ingestTime is when the source took the event in, on its clock.
func ingestTime(e Event) int64 { return e.Time() }

// hourMinuteOf is the SQL's DATE_FORMAT(dateTime, 'HH:mm') (UTC).
func hourMinuteOf(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04") }
