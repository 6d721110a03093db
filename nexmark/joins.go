package nexmark

import (
	"encoding/binary"
	"fmt"
)

// The joins: q3 (auctions with their sellers), q4 and q9 (auctions with
// the bids made while they ran), q20 (bids with their auctions). Each is a
// regular join: both sides are kept for the whole run (unbounded
// retention), and a row that comes before its match waits for it.

func wantAuctionOrBid(e Event, _ int64, s Store) {
	switch e.Kind {
	case KindAuction:
		s.Want("early", i64(e.Auction.ID))
		s.Want("best", i64(e.Auction.ID))
	case KindBid:
		// "early" too: a bid whose auction has not come appends to it.
		s.Want("auction", i64(e.Bid.Auction))
		s.Want("best", i64(e.Bid.Auction))
		s.Want("early", i64(e.Bid.Auction))
	}
}

// A joined bid as auctionBids keeps it ("best" and "early" items): price,
// dateTime, bidder, then (q9) the bid's columns of the row.
func encodeJoinedBid(b *Bid, withRow bool) []byte {
	v := u64s(b.Price, b.DateTime, b.Bidder)
	if withRow {
		var r row
		r.b = v
		r.int(b.Auction).int(b.Bidder).int(b.Price).int(b.DateTime).str(b.Extra)
		v = r.b
	}
	return v
}

// auctionBids is the join of q4 and q9: an auction with the bids on it
// made between its start and its expiry (both included). An auction is
// kept for the run ("auction": dateTime, expires, category, then with
// rows its columns); a bid that comes before its auction waits in
// "early", and is joined when the auction comes, in the order the bids
// came. Of the joined bids it keeps the best — the highest price, then
// the earlier dateTime, then the one that came first — in "best", and
// calls better with the auction (dateTime, expires, category), its
// columns (q9) or nil, the old best's price (had: whether there was one)
// and the new best each time it changes.
func auctionBids(e Event, s Store, withRows bool, better func(auction []int64, cols []byte, had bool, was int64, bid []byte) error) error {
	join := func(auctionID int64, auction []int64, cols []byte, bid []byte) error {
		f, err := fromU64s(bid, 3, "joined bid")
		if err != nil {
			return err
		}
		if f[1] < auction[0] || f[1] > auction[1] {
			return nil
		}
		v, ok, err := s.Get("best", i64(auctionID))
		if err != nil {
			return err
		}
		var was int64
		if ok {
			old, err := fromU64s(v, 2, "best bid")
			if err != nil {
				return err
			}
			if f[0] < old[0] || f[0] == old[0] && f[1] >= old[1] {
				return nil
			}
			was = old[0]
		}
		s.Put("best", i64(auctionID), bid)
		return better(auction, cols, ok, was, bid)
	}
	switch e.Kind {
	case KindAuction:
		a := e.Auction
		auction := []int64{a.DateTime, a.Expires, a.Category}
		v := u64s(auction...)
		if withRows {
			var r row
			r.b = v
			r.int(a.ID).str(a.ItemName).str(a.Description).int(a.InitialBid).int(a.Reserve).int(a.DateTime).int(a.Expires).int(a.Seller).int(a.Category).str(a.Extra)
			v = r.b
		}
		s.Put("auction", i64(a.ID), v)
		early, err := s.List("early", i64(a.ID))
		if err != nil {
			return err
		}
		for _, b := range early {
			if err := join(a.ID, auction, v[24:], b); err != nil {
				return err
			}
		}
		if len(early) > 0 {
			s.Delete("early", i64(a.ID))
		}
	case KindBid:
		b := e.Bid
		bid := encodeJoinedBid(b, withRows)
		v, ok, err := s.Get("auction", i64(b.Auction))
		if err != nil {
			return err
		}
		if !ok {
			return s.Append("early", i64(b.Auction), bid)
		}
		auction, err := fromU64s(v, 3, "auction")
		if err != nil {
			return err
		}
		return join(b.Auction, auction, v[24:], bid)
	}
	return nil
}

// q3: SELECT P.name, P.city, P.state, A.id FROM auction A JOIN person
// P ON A.seller = P.id WHERE A.category = 10 AND P.state IN ('OR',
// 'ID', 'CA'). A person is kept as their row's name, city and state,
// or empty outside OR, ID and CA (so an auction of theirs is dropped at
// once rather than kept waiting); an auction in category 10 that comes
// before its seller waits in "pending" as its id.
func q3() Query {
	return Query{Name: "q3", Stateful: true, States: map[string]bool{"person": false, "pending": true},
		Keys: oneKey(personOrSeller),
		Wants: func(e Event, _ int64, s Store) {
			switch e.Kind {
			case KindPerson:
				s.Want("pending", i64(e.Person.ID))
			case KindAuction:
				if e.Auction.Category == 10 {
					// "pending" too: an auction whose seller has not come
					// appends to it.
					s.Want("person", i64(e.Auction.Seller))
					s.Want("pending", i64(e.Auction.Seller))
				}
			}
		},
		Process: func(e Event, _ int64, s Store, out *Out) error {
			switch e.Kind {
			case KindPerson:
				p := e.Person
				var cols []byte
				if p.State == "OR" || p.State == "ID" || p.State == "CA" {
					var r row
					cols = r.str(p.Name).str(p.City).str(p.State).bytes()
				}
				s.Put("person", i64(p.ID), cols)
				pending, err := s.List("pending", i64(p.ID))
				if err != nil {
					return err
				}
				for _, a := range pending {
					if cols != nil {
						var r row
						out.emitRow(r.raw(cols).raw(a))
					}
				}
				if len(pending) > 0 {
					s.Delete("pending", i64(p.ID))
				}
			case KindAuction:
				a := e.Auction
				if a.Category != 10 {
					return nil
				}
				cols, ok, err := s.Get("person", i64(a.Seller))
				if err != nil {
					return err
				}
				switch {
				case !ok:
					return s.Append("pending", i64(a.Seller), fmt.Appendf(nil, "%d", a.ID))
				case len(cols) > 0:
					var r row
					out.emitRow(r.raw(cols).int(a.ID))
				}
			}
			return nil
		}}
}

// q4: SELECT category, AVG(final) FROM (SELECT MAX(B.price) AS final,
// A.category FROM auction A, bid B WHERE A.id = B.auction AND
// B.dateTime BETWEEN A.dateTime AND A.expires GROUP BY A.id,
// A.category) GROUP BY category. An update: each time an auction's
// maximum changes, the category's new average (BIGINT: the sum over
// the count, truncated) is emitted. The first stage (by auction)
// forwards each change — the event's id and the change's place in it
// (so the final stage takes changes in the order they were made), the
// category, whether there was a maximum, the old and the new — to the
// final stage, which keeps a sum and count per category.
func q4() Query {
	return Query{Name: "q4", Stateful: true, States: map[string]bool{"auction": false, "best": false, "early": true},
		Keys: oneKey(auctionOrBid), Wants: wantAuctionOrBid,
		Process: func(e Event, _ int64, s Store, out *Out) error {
			seq := int64(0)
			return auctionBids(e, s, false, func(auction []int64, _ []byte, had bool, was int64, bid []byte) error {
				h := int64(0)
				if had {
					h = 1
				}
				out.Forward(e.Time(), u64s(e.ID, seq, auction[2], h, was, int64(binary.BigEndian.Uint64(bid))))
				seq++
				return nil
			})
		},
		Final: &FinalOperator{Process: func(r Record, s Store, out *Out) error {
			f, err := fromU64s(r.Data, 6, "q4 record")
			if err != nil {
				return err
			}
			category := i64(f[2])
			v, ok, _ := s.Get("category", category)
			acc := []int64{0, 0} // sum, count
			if ok {
				if acc, err = fromU64s(v, 2, "category average"); err != nil {
					return err
				}
			}
			if f[3] == 1 {
				acc[0] -= f[4]
			} else {
				acc[1]++
			}
			acc[0] += f[5]
			s.Put("category", category, u64s(acc...))
			var row row
			out.emitRow(row.int(f[2]).int(acc[0] / acc[1]))
			return nil
		}}}
}

// q9: the winning bid of each auction — ROW_NUMBER() OVER (PARTITION
// BY A.id ORDER BY B.price DESC, B.dateTime ASC) = 1 over the same
// join as q4 — with A.*, B.auction, B.bidder, B.price, B.dateTime and
// B.extra, emitted each time it changes.
func q9() Query {
	return Query{Name: "q9", Stateful: true, States: map[string]bool{"auction": false, "best": false, "early": true},
		Keys: oneKey(auctionOrBid), Wants: wantAuctionOrBid,
		Process: func(e Event, _ int64, s Store, out *Out) error {
			return auctionBids(e, s, true, func(_ []int64, cols []byte, _ bool, _ int64, bid []byte) error {
				var r row
				out.emitRow(r.raw(cols).raw(bid[24:]))
				return nil
			})
		}}
}

// q20: SELECT auction, bidder, price, channel, url, B.dateTime,
// B.extra, itemName, description, initialBid, reserve, A.dateTime,
// expires, seller, category, A.extra FROM bid B JOIN auction A ON
// B.auction = A.id WHERE A.category = 10. An auction is kept as its
// category, then (category 10 only) its columns of the row; a bid
// that comes before its auction waits in "early" as its columns.
func q20() Query {
	return Query{Name: "q20", Stateful: true, States: map[string]bool{"auction": false, "early": true},
		Keys: oneKey(auctionOrBid),
		Wants: func(e Event, _ int64, s Store) {
			switch e.Kind {
			case KindAuction:
				s.Want("early", i64(e.Auction.ID))
			case KindBid:
				// "early" too: a bid whose auction has not come appends to
				// it.
				s.Want("auction", i64(e.Bid.Auction))
				s.Want("early", i64(e.Bid.Auction))
			}
		},
		Process: func(e Event, _ int64, s Store, out *Out) error {
			switch e.Kind {
			case KindAuction:
				a := e.Auction
				v := i64(a.Category)
				if a.Category == 10 {
					var r row
					r.str(a.ItemName).str(a.Description).int(a.InitialBid).int(a.Reserve).int(a.DateTime).int(a.Expires).int(a.Seller).int(a.Category).str(a.Extra)
					v = append(v, r.b...)
				}
				s.Put("auction", i64(a.ID), v)
				early, err := s.List("early", i64(a.ID))
				if err != nil {
					return err
				}
				if a.Category == 10 {
					for _, b := range early {
						var r row
						out.emitRow(r.raw(b).raw(v[8:]))
					}
				}
				if len(early) > 0 {
					s.Delete("early", i64(a.ID))
				}
			case KindBid:
				b := e.Bid
				v, ok, err := s.Get("auction", i64(b.Auction))
				if err != nil {
					return err
				}
				if !ok {
					var r row
					return s.Append("early", i64(b.Auction), r.bidRow(b).bytes())
				}
				if len(v) < 8 {
					return fmt.Errorf("a stored auction of %d bytes", len(v))
				}
				if binary.BigEndian.Uint64(v) == 10 {
					var r row
					out.emitRow(r.bidRow(b).raw(v[8:]))
				}
			}
			return nil
		}}
}

// key is the auction an auction or bid event is about.
func (e Event) key() int64 {
	if e.Kind == KindAuction {
		return e.Auction.ID
	}
	return e.Bid.Auction
}
