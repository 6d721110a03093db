package nexmark

import (
	"encoding/binary"
	"fmt"

	"github.com/ringstore/ringstore/state"
)

// The joins: q3 (auctions with their sellers), q4 and q9 (auctions with
// the bids made while they ran), q20 (bids with their auctions). Each is a
// regular join: both sides are kept for the whole run (unbounded
// retention), and a row that comes before its match waits for it.

// auctionJoin is the join of q4 and q9: an auction with the bids on it
// made between its start and its expiry (both included). An auction is
// kept for the run ("auction": dateTime, expires, category, then with
// rows its columns); a bid that comes before its auction waits in
// "early", and is joined when the auction comes, in the order the bids
// came. Of the joined bids it keeps the best — the highest price, then
// the earlier dateTime, then the one that came first — in "best".
type auctionJoin struct {
	withRows bool
	auction  *state.Value[[]byte]
	best     *state.Value[[]byte]
	early    *state.List[[]byte]
}

func openAuctionJoin(b *state.Backend, query string, withRows bool) (auctionJoin, error) {
	o := &opState{b: b, query: query}
	j := auctionJoin{withRows: withRows, auction: openValue(o, "auction", state.BytesCodec),
		best: openValue(o, "best", state.BytesCodec), early: openList(o, "early", state.BytesCodec)}
	return j, o.err
}

// Lookups of an auction: 0 early, 1 best; of a bid: 0 auction, 1 best,
// 2 early (a bid whose auction has not come appends to it).
func (j auctionJoin) Want(e Event, _ int64, mb *state.MiniBatch, l *Lookups) {
	switch e.Kind {
	case KindAuction:
		k := pk(e.Auction.ID)
		l[0], l[1] = j.early.Want(mb, k, nil), j.best.Want(mb, k, nil)
	case KindBid:
		k := pk(e.Bid.Auction)
		l[0], l[1], l[2] = j.auction.Want(mb, k, nil), j.best.Want(mb, k, nil), j.early.Want(mb, k, nil)
	}
}

// A joined bid as the join keeps it ("best" and "early" items): price,
// dateTime, bidder, then (q9) the bid's columns of the row.
func encodeJoinedBid(b *Bid, withRow bool) []byte {
	n := 3 * 8
	if withRow {
		n += 4*(20+1) + len(b.Extra) // four decimal int64s and their commas, then Extra
	}
	v := make([]byte, 0, n)
	for _, x := range [...]int64{b.Price, b.DateTime, b.Bidder} {
		v = binary.BigEndian.AppendUint64(v, uint64(x))
	}
	if withRow {
		r := row{b: v}
		r.int(b.Auction).int(b.Bidder).int(b.Price).int(b.DateTime).str(b.Extra)
		v = r.b
	}
	return v
}

// process joins event e and calls better with the auction (dateTime,
// expires, category), its columns (q9) or nil, the old best's price
// (had: whether there was one) and the new best each time the best
// changes.
func (j auctionJoin) process(e Event, mb *state.MiniBatch, l *Lookups, better func(auction []int64, cols []byte, had bool, was int64, bid []byte) error) error {
	join := func(auction []int64, cols []byte, bid []byte) error {
		f, err := fromU64s(bid, 3, "joined bid")
		if err != nil {
			return err
		}
		if f[1] < auction[0] || f[1] > auction[1] {
			return nil
		}
		v, ok, err := j.best.Get(mb, l[1])
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
		if err := j.best.Put(mb, l[1], bid); err != nil {
			return err
		}
		return better(auction, cols, ok, was, bid)
	}
	switch e.Kind {
	case KindAuction:
		a := e.Auction
		auction := []int64{a.DateTime, a.Expires, a.Category}
		v := u64s(auction...)
		if j.withRows {
			var r row
			r.b = v
			r.int(a.ID).str(a.ItemName).str(a.Description).int(a.InitialBid).int(a.Reserve).int(a.DateTime).int(a.Expires).int(a.Seller).int(a.Category).str(a.Extra)
			v = r.b
		}
		if err := j.auction.Put(mb, j.auction.At(pk(a.ID), nil), v); err != nil {
			return err
		}
		early, err := j.early.Get(mb, l[0])
		if err != nil {
			return err
		}
		for _, b := range early {
			if err := join(auction, v[24:], b); err != nil {
				return err
			}
		}
		if len(early) > 0 {
			return j.early.Clear(mb, l[0])
		}
	case KindBid:
		b := e.Bid
		bid := encodeJoinedBid(b, j.withRows)
		v, ok, err := j.auction.Get(mb, l[0])
		if err != nil {
			return err
		}
		if !ok {
			return j.early.Add(mb, l[2], bid)
		}
		auction, err := fromU64s(v, 3, "auction")
		if err != nil {
			return err
		}
		return join(auction, v[24:], bid)
	}
	return nil
}

// q3Op is q3's join. A person is kept as their row's name, city and
// state, or empty outside OR, ID and CA (so an auction of theirs is
// dropped at once rather than kept waiting); an auction in category 10
// that comes before its seller waits in "pending" as its id.
type q3Op struct {
	person  *state.Value[[]byte]
	pending *state.List[[]byte]
}

// Lookups of a person: 0 pending; of an auction in category 10: 0
// person, 1 pending.
func (o q3Op) Want(e Event, _ int64, mb *state.MiniBatch, l *Lookups) {
	switch e.Kind {
	case KindPerson:
		l[0] = o.pending.Want(mb, pk(e.Person.ID), nil)
	case KindAuction:
		if e.Auction.Category == 10 {
			k := pk(e.Auction.Seller)
			l[0], l[1] = o.person.Want(mb, k, nil), o.pending.Want(mb, k, nil)
		}
	}
}

func (o q3Op) Process(e Event, _ int64, mb *state.MiniBatch, l *Lookups, out *Out) error {
	switch e.Kind {
	case KindPerson:
		p := e.Person
		var cols []byte
		if p.State == "OR" || p.State == "ID" || p.State == "CA" {
			var r row
			cols = r.str(p.Name).str(p.City).str(p.State).bytes()
		}
		if err := o.person.Put(mb, o.person.At(pk(p.ID), nil), cols); err != nil {
			return err
		}
		pending, err := o.pending.Get(mb, l[0])
		if err != nil {
			return err
		}
		for _, a := range pending {
			if cols != nil {
				r := out.row()
				out.emitRow(r.raw(cols).raw(a))
			}
		}
		if len(pending) > 0 {
			return o.pending.Clear(mb, l[0])
		}
	case KindAuction:
		a := e.Auction
		if a.Category != 10 {
			return nil
		}
		cols, ok, err := o.person.Get(mb, l[0])
		if err != nil {
			return err
		}
		switch {
		case !ok:
			return o.pending.Add(mb, l[1], fmt.Appendf(nil, "%d", a.ID))
		case len(cols) > 0:
			r := out.row()
			out.emitRow(r.raw(cols).int(a.ID))
		}
	}
	return nil
}

// q4Op is q4's first stage: the join, forwarding each change of an
// auction's maximum — the event's id and the change's place in it (so the
// final stage takes changes in the order they were made), the category,
// whether there was a maximum, the old and the new — to the final stage.
type q4Op struct{ auctionJoin }

func (o q4Op) Process(e Event, _ int64, mb *state.MiniBatch, l *Lookups, out *Out) error {
	seq := int64(0)
	return o.process(e, mb, l, func(auction []int64, _ []byte, had bool, was int64, bid []byte) error {
		h := int64(0)
		if had {
			h = 1
		}
		out.Forward(e.Time(), u64s(e.ID, seq, auction[2], h, was, int64(binary.BigEndian.Uint64(bid))))
		seq++
		return nil
	})
}

// q9Op is q9's: the join, emitting the auction's row and its new best
// bid's each time the best changes.
type q9Op struct{ auctionJoin }

func (o q9Op) Process(e Event, _ int64, mb *state.MiniBatch, l *Lookups, out *Out) error {
	return o.process(e, mb, l, func(_ []int64, cols []byte, _ bool, _ int64, bid []byte) error {
		r := out.row()
		out.emitRow(r.raw(cols).raw(bid[24:]))
		return nil
	})
}

// q20Op is q20's join. An auction is kept as its category, then
// (category 10 only) its columns of the row; a bid that comes before its
// auction waits in "early" as its columns.
type q20Op struct {
	auction *state.Value[[]byte]
	early   *state.List[[]byte]
}

// Lookups of an auction: 0 early; of a bid: 0 auction, 1 early.
func (o q20Op) Want(e Event, _ int64, mb *state.MiniBatch, l *Lookups) {
	switch e.Kind {
	case KindAuction:
		l[0] = o.early.Want(mb, pk(e.Auction.ID), nil)
	case KindBid:
		k := pk(e.Bid.Auction)
		l[0], l[1] = o.auction.Want(mb, k, nil), o.early.Want(mb, k, nil)
	}
}

func (o q20Op) Process(e Event, _ int64, mb *state.MiniBatch, l *Lookups, out *Out) error {
	switch e.Kind {
	case KindAuction:
		a := e.Auction
		v := i64(a.Category)
		if a.Category == 10 {
			var r row
			r.str(a.ItemName).str(a.Description).int(a.InitialBid).int(a.Reserve).int(a.DateTime).int(a.Expires).int(a.Seller).int(a.Category).str(a.Extra)
			v = append(v, r.b...)
		}
		if err := o.auction.Put(mb, o.auction.At(pk(a.ID), nil), v); err != nil {
			return err
		}
		early, err := o.early.Get(mb, l[0])
		if err != nil {
			return err
		}
		if a.Category == 10 {
			for _, b := range early {
				r := out.row()
				out.emitRow(r.raw(b).raw(v[8:]))
			}
		}
		if len(early) > 0 {
			return o.early.Clear(mb, l[0])
		}
	case KindBid:
		b := e.Bid
		v, ok, err := o.auction.Get(mb, l[0])
		if err != nil {
			return err
		}
		if !ok {
			var r row
			return o.early.Add(mb, l[1], r.bidRow(b).bytes())
		}
		if len(v) < 8 {
			return damaged("", -1, "a stored auction of %d bytes", len(v))
		}
		if binary.BigEndian.Uint64(v) == 10 {
			r := out.row()
			out.emitRow(r.bidRow(b).raw(v[8:]))
		}
	}
	return nil
}

// q3: SELECT P.name, P.city, P.state, A.id FROM auction A JOIN person P
// ON A.seller = P.id WHERE A.category = 10 AND P.state IN ('OR', 'ID',
// 'CA').
func q3() Query {
	return Query{Name: "q3", Stateful: true, Keys: oneKey(personOrSeller), Open: func(b *state.Backend) (Operator, error) {
		o := &opState{b: b, query: "q3"}
		op := q3Op{person: openValue(o, "person", state.BytesCodec), pending: openList(o, "pending", state.BytesCodec)}
		return op, o.err
	}}
}

// q4: SELECT category, AVG(final) FROM (SELECT MAX(B.price) AS final,
// A.category FROM auction A, bid B WHERE A.id = B.auction AND B.dateTime
// BETWEEN A.dateTime AND A.expires GROUP BY A.id, A.category) GROUP BY
// category. An update: each time an auction's maximum changes, the
// category's new average (BIGINT: the sum over the count, truncated) is
// emitted. The final stage keeps a sum and count per category.
func q4() Query {
	return Query{Name: "q4", Stateful: true, Keys: oneKey(auctionOrBid),
		Open: func(b *state.Backend) (Operator, error) {
			j, err := openAuctionJoin(b, "q4", false)
			return q4Op{j}, err
		},
		Final: &FinalOperator{Process: func(r Record, s *memState, out *Out) error {
			f, err := fromU64s(r.Data, 6, "q4 record")
			if err != nil {
				return err
			}
			category := i64(f[2])
			v, ok := s.get("category", category)
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
			s.put("category", category, u64s(acc...))
			row := out.row()
			out.emitRow(row.int(f[2]).int(acc[0] / acc[1]))
			return nil
		}}}
}

// q9: the winning bid of each auction — ROW_NUMBER() OVER (PARTITION BY
// A.id ORDER BY B.price DESC, B.dateTime ASC) = 1 over the same join as
// q4 — with A.*, B.auction, B.bidder, B.price, B.dateTime and B.extra,
// emitted each time it changes.
func q9() Query {
	return Query{Name: "q9", Stateful: true, Keys: oneKey(auctionOrBid), Open: func(b *state.Backend) (Operator, error) {
		j, err := openAuctionJoin(b, "q9", true)
		return q9Op{j}, err
	}}
}

// q20: SELECT auction, bidder, price, channel, url, B.dateTime, B.extra,
// itemName, description, initialBid, reserve, A.dateTime, expires,
// seller, category, A.extra FROM bid B JOIN auction A ON B.auction = A.id
// WHERE A.category = 10.
func q20() Query {
	return Query{Name: "q20", Stateful: true, Keys: oneKey(auctionOrBid), Open: func(b *state.Backend) (Operator, error) {
		o := &opState{b: b, query: "q20"}
		op := q20Op{auction: openValue(o, "auction", state.BytesCodec), early: openList(o, "early", state.BytesCodec)}
		return op, o.err
	}}
}
