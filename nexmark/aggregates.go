package nexmark

import (
	"encoding/binary"
	"hash/fnv"

	"github.com/ringstore/ringstore/state"
)

// The updating aggregates: q15, q16 and q17 (per group, counts and prices
// updated with every bid), q18 (the last bid of each bidder on each
// auction) and q19 (the ten highest bids of each auction). Each emits the
// row of every update it makes, the group's new row, as it is made.

// distinctCounts are the counts of q15 and q16 for one group: bids, and
// distinct bidders and auctions, overall and in each of the three price
// ranks (below 10,000, below 1,000,000, the rest).
type distinctCounts struct {
	bids, bidders, auctions [4]int64 // [0] all, [1..3] by rank
}

func rankOf(price int64) int {
	switch {
	case price < 10_000:
		return 1
	case price < 1_000_000:
		return 2
	}
	return 3
}

// counts appends the twelve counts in the SQL's order: total_bids,
// rank1_bids .. rank3_bids, total_bidders .., total_auctions ...
func (r *row) counts(c distinctCounts) *row {
	for _, arr := range [][4]int64{c.bids, c.bidders, c.auctions} {
		for _, x := range arr {
			r.int(x)
		}
	}
	return r
}

const countsSize = 12 * 8

// distinct is the state of q16: per group (its partition key and
// its columns as the namespace) the counts, and per (group, "b"|"a", id)
// the ranks already counted for that bidder or auction (a bit mask; bit
// 0: counted at all). With minute, the group's value also keeps the
// largest 'HH:mm' of its bids (q16's max(DATE_FORMAT(dateTime, 'HH:mm'))).
type distinct struct {
	counts *state.Value[[]byte]
	seen   *state.Value[[]byte]
	minute bool
}

func openDistinct(b *state.Backend, query, name string, minute bool) (distinct, error) {
	o := &opState{b: b, query: query}
	d := distinct{counts: openValue(o, name, state.BytesCodec), seen: openValue(o, name+"-seen", state.BytesCodec), minute: minute}
	return d, o.err
}

func seenNS(group []byte, kind byte, id int64) []byte {
	k := make([]byte, 0, len(group)+9)
	k = append(append(k, group...), kind)
	return binary.BigEndian.AppendUint64(k, uint64(id))
}

// want's lookups: 0 the group, 1 the bidder's mark, 2 the auction's.
func (d distinct) want(key, group []byte, b *Bid, mb *state.MiniBatch, l *Lookups) {
	l[0] = d.counts.Want(mb, key, group)
	l[1] = d.seen.Want(mb, key, seenNS(group, 'b', b.Bidder))
	l[2] = d.seen.Want(mb, key, seenNS(group, 'a', b.Auction))
}

// decodeCounts reads the twelve counts a group's value starts with (at
// least countsSize bytes).
func decodeCounts(v []byte) distinctCounts {
	var c distinctCounts
	for i := range 4 {
		c.bids[i] = int64(binary.BigEndian.Uint64(v[8*i:]))
		c.bidders[i] = int64(binary.BigEndian.Uint64(v[32+8*i:]))
		c.auctions[i] = int64(binary.BigEndian.Uint64(v[64+8*i:]))
	}
	return c
}

// markSeen marks a bidder or auction (its mark at lookup l) as counted at
// all and in rank r, and says whether it was new to either.
func markSeen(seen *state.Value[[]byte], mb *state.MiniBatch, l state.Lookup, r int) (newAll, newRank bool, err error) {
	mv, ok, err := seen.Get(mb, l)
	if err != nil {
		return false, false, err
	}
	mask := byte(0)
	if ok && len(mv) == 1 {
		mask = mv[0]
	}
	if nm := mask | 1 | 1<<r; nm != mask {
		if err := seen.Put(mb, l, []byte{nm}); err != nil {
			return false, false, err
		}
	}
	return mask&1 == 0, mask&(1<<r) == 0, nil
}

// add updates a group's counts with one bid and returns them (and with
// minute, the group's latest 'HH:mm').
func (d distinct) add(b *Bid, mb *state.MiniBatch, l *Lookups) (distinctCounts, string, error) {
	var c distinctCounts
	v, ok, err := d.counts.Get(mb, l[0])
	if err != nil {
		return c, "", err
	}
	want := countsSize
	if d.minute {
		want += 5
	}
	m := hourMinuteOf(b.DateTime)
	if ok {
		if len(v) != want {
			return c, "", damaged("", -1, "a stored count of %d bytes, want %d", len(v), want)
		}
		c = decodeCounts(v)
		if d.minute {
			m = max(m, string(v[countsSize:]))
		}
	}
	r := rankOf(b.Price)
	c.bids[0]++
	c.bids[r]++
	for i, count := range []*[4]int64{&c.bidders, &c.auctions} {
		newAll, newRank, err := markSeen(d.seen, mb, l[1+i], r)
		if err != nil {
			return c, "", err
		}
		if newAll {
			count[0]++
		}
		if newRank {
			count[r]++
		}
	}
	nv := make([]byte, 0, want)
	for _, arr := range [][4]int64{c.bids, c.bidders, c.auctions} {
		for _, x := range arr {
			nv = binary.BigEndian.AppendUint64(nv, uint64(x))
		}
	}
	if d.minute {
		nv = append(nv, m...)
	}
	return c, m, d.counts.Put(mb, l[0], nv)
}

// q15Op is q15's first stage: per day and bucket, the bidders (or the
// auctions) already counted, and for each bid a record for q15Final of
// what it adds to its day's counts: event id, day, column, rank, new at
// all, new in its rank.
type q15Op struct{ seen *state.Value[[]byte] }

func (o q15Op) Want(e Event, key int64, mb *state.MiniBatch, l *Lookups) {
	kind, id := q15Column(e.Bid, key)
	l[0] = o.seen.Want(mb, pk(key), seenNS(nil, kind, id))
}

func (o q15Op) Process(e Event, key int64, mb *state.MiniBatch, l *Lookups, out *Out) error {
	r := rankOf(e.Bid.Price)
	newAll, newRank, err := markSeen(o.seen, mb, l[0], r)
	if err != nil {
		return err
	}
	b2i := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	out.Forward(e.Time(), u64s(e.ID, e.Bid.DateTime/86_400_000, key>>10&1, int64(r), b2i(newAll), b2i(newRank)))
	return nil
}

// q15Buckets is the number of buckets q15's distinct counts are split
// into (Flink's table.optimizer.distinct-agg.split.bucket-num).
const q15Buckets = 1024

// q15Keys sends a bid twice: under its day and its bidder's bucket, and
// under its day and its auction's bucket. A key is day<<11 | column<<10 |
// bucket (column 0: bidder, 1: auction).
func q15Keys(e Event, dst []int64) []int64 {
	if e.Kind != KindBid {
		return dst
	}
	day := e.Bid.DateTime / 86_400_000
	return append(dst, day<<11|q15Bucket(e.Bid.Bidder), day<<11|1<<10|q15Bucket(e.Bid.Auction))
}

// q15Bucket is MOD(HASH_CODE(id), 1024) with Java's Long.hashCode.
func q15Bucket(id int64) int64 {
	h := int32(uint64(id) ^ uint64(id)>>32)
	return int64(((h % q15Buckets) + q15Buckets) % q15Buckets)
}

// q15Column says which column a bid delivered under key counts: 'b' and
// its bidder, or 'a' and its auction.
func q15Column(b *Bid, key int64) (byte, int64) {
	if key>>10&1 == 0 {
		return 'b', b.Bidder
	}
	return 'a', b.Auction
}

// q15Final is q15's final stage: per day the twelve counts, summed from
// the first stage's records. A bid's two records meet in it in order (the
// bidder's, then the auction's: they sort by event id, then column), and
// after the second it emits the day's new row.
func q15Final(r Record, s *memState, out *Out) error {
	if len(r.Data) != 48 {
		return damaged("", -1, "a q15 record of %d bytes, want 48", len(r.Data))
	}
	f := func(i int) int64 { return int64(binary.BigEndian.Uint64(r.Data[8*i:])) }
	day, col, rank, newAll, newRank := f(1), f(2), f(3), f(4), f(5)
	if col < 0 || col > 1 || rank < 1 || rank > 3 {
		return damaged("", -1, "a q15 record of column %d, rank %d", col, rank)
	}
	// The day's counts, in place: bids, bidders, auctions, each all and
	// by rank.
	v := s.update("day", r.Data[8:16], countsSize)
	add := func(i, n int64) {
		binary.BigEndian.PutUint64(v[8*i:], binary.BigEndian.Uint64(v[8*i:])+uint64(n))
	}
	base := int64(4) // bidders
	if col == 1 {
		base = 8 // auctions
	} else {
		add(0, 1)
		add(rank, 1)
	}
	add(base, newAll)
	add(base+rank, newRank)
	if col == 1 {
		row := out.row()
		out.emitRow(row.str(dayOf(day * 86_400_000)).counts(decodeCounts(v)))
	}
	return nil
}

// q16Op: per channel and day.
type q16Op struct{ distinct }

func (o q16Op) Want(e Event, _ int64, mb *state.MiniBatch, l *Lookups) {
	b := e.Bid
	o.want(pk(channelHash(b.Channel)), []byte(b.Channel+"|"+dayOf(b.DateTime)), b, mb, l)
}

func (o q16Op) Process(e Event, _ int64, mb *state.MiniBatch, l *Lookups, out *Out) error {
	b := e.Bid
	c, minute, err := o.add(b, mb, l)
	if err != nil {
		return err
	}
	r := out.row()
	out.emitRow(r.str(b.Channel).str(dayOf(b.DateTime)).str(minute).counts(c))
	return nil
}

// q17Op keeps per auction and day: total, rank1, rank2, rank3, min, max,
// sum.
type q17Op struct{ day *state.Value[[]byte] }

func (o q17Op) Want(e Event, _ int64, mb *state.MiniBatch, l *Lookups) {
	l[0] = o.day.Want(mb, pk(e.Bid.Auction), i64(e.Bid.DateTime/86_400_000))
}

func (o q17Op) Process(e Event, _ int64, mb *state.MiniBatch, l *Lookups, out *Out) error {
	b := e.Bid
	v, ok, err := o.day.Get(mb, l[0])
	if err != nil {
		return err
	}
	var acc [7]int64 // total, rank1, rank2, rank3, min, max, sum
	if ok {
		if len(v) != 56 {
			return damaged("", -1, "a stored q17 accumulator of %d bytes", len(v))
		}
		for i := range acc {
			acc[i] = int64(binary.BigEndian.Uint64(v[8*i:]))
		}
	} else {
		acc[4] = b.Price
	}
	acc[0]++
	acc[rankOf(b.Price)]++
	acc[4], acc[5], acc[6] = min(acc[4], b.Price), max(acc[5], b.Price), acc[6]+b.Price
	if err := o.day.Put(mb, l[0], u64s(acc[:]...)); err != nil {
		return err
	}
	r := out.row()
	r.int(b.Auction).str(dayOf(b.DateTime))
	for _, x := range acc[:6] {
		r.int(x)
	}
	out.emitRow(r.int(acc[6] / acc[0]).int(acc[6]))
	return nil
}

// q18Op keeps per bidder and auction the time of the last bid.
type q18Op struct{ last *state.Value[int64] }

func (o q18Op) Want(e Event, _ int64, mb *state.MiniBatch, l *Lookups) {
	l[0] = o.last.Want(mb, pk(e.Bid.Bidder), i64(e.Bid.Auction))
}

func (o q18Op) Process(e Event, _ int64, mb *state.MiniBatch, l *Lookups, out *Out) error {
	b := e.Bid
	t, ok, err := o.last.Get(mb, l[0])
	if err != nil {
		return err
	}
	if ok && t > b.DateTime {
		return nil
	}
	if err := o.last.Put(mb, l[0], b.DateTime); err != nil {
		return err
	}
	r := out.row()
	out.emitRow(r.bidRow(b))
	return nil
}

// q19Op keeps per auction the prices of its ten highest bids, highest
// first.
type q19Op struct{ top *state.Value[[]byte] }

func (o q19Op) Want(e Event, _ int64, mb *state.MiniBatch, l *Lookups) {
	l[0] = o.top.Want(mb, pk(e.Bid.Auction), nil)
}

func (o q19Op) Process(e Event, _ int64, mb *state.MiniBatch, l *Lookups, out *Out) error {
	b := e.Bid
	v, _, err := o.top.Get(mb, l[0])
	if err != nil {
		return err
	}
	if len(v)%8 != 0 || len(v) > 80 {
		return damaged("", -1, "a stored q19 top ten of %d bytes", len(v))
	}
	rank := 1
	for ; 8*(rank-1) < len(v) && int64(binary.BigEndian.Uint64(v[8*(rank-1):])) >= b.Price; rank++ {
	}
	if rank > 10 {
		return nil
	}
	top := make([]byte, 0, len(v)+8)
	top = append(top, v[:8*(rank-1)]...)
	top = binary.BigEndian.AppendUint64(top, uint64(b.Price))
	top = append(top, v[8*(rank-1):]...)
	if err := o.top.Put(mb, l[0], top[:min(len(top), 80)]); err != nil {
		return err
	}
	r := out.row()
	out.emitRow(r.bidRow(b).int(int64(rank)))
	return nil
}

// channelKey partitions q16 by channel.
func channelKey(e Event) (int64, bool) {
	if e.Kind != KindBid {
		return 0, false
	}
	return channelHash(e.Bid.Channel), true
}

func channelHash(channel string) int64 {
	h := fnv.New64a()
	h.Write([]byte(channel))
	return int64(h.Sum64())
}

// q15: per day (DATE_FORMAT 'yyyy-MM-dd'), the bids and the distinct
// bidders and auctions, overall and by price rank. As Flink plans it
// under the reference's configuration (table.optimizer.distinct-agg.split
// .enabled): the distinct counts are split into 1,024 buckets of each
// column, so that the first stage's state is spread over the workers,
// and a final stage sums them per day (its state one row per day).
func q15() Query {
	return Query{Name: "q15", Stateful: true, Keys: q15Keys,
		Open: func(b *state.Backend) (Operator, error) {
			o := &opState{b: b, query: "q15"}
			op := q15Op{seen: openValue(o, "seen", state.BytesCodec)}
			return op, o.err
		},
		Final: &FinalOperator{Process: q15Final}}
}

// q16: the same per channel and day, with the group's latest minute
// (max(DATE_FORMAT(dateTime, 'HH:mm'))).
func q16() Query {
	return Query{Name: "q16", Stateful: true, Keys: oneKey(channelKey), Open: func(b *state.Backend) (Operator, error) {
		d, err := openDistinct(b, "q16", "chday", true)
		return q16Op{d}, err
	}}
}

// q17: per auction and day, the number of bids in three price ranks and
// the min, max, average (BIGINT: truncated) and sum of the prices.
func q17() Query {
	return Query{Name: "q17", Stateful: true, Keys: oneKey(bidKey), Open: func(b *state.Backend) (Operator, error) {
		o := &opState{b: b, query: "q17"}
		op := q17Op{day: openValue(o, "day", state.BytesCodec)}
		return op, o.err
	}}
}

// q18: the last bid of each bidder on each auction (ROW_NUMBER() OVER
// (PARTITION BY bidder, auction ORDER BY dateTime DESC) = 1): a bid whose
// dateTime is not before the kept one's replaces it and is emitted.
func q18() Query {
	return Query{Name: "q18", Stateful: true, Keys: oneKey(bidderKey), Open: func(b *state.Backend) (Operator, error) {
		o := &opState{b: b, query: "q18"}
		op := q18Op{last: openValue(o, "last", state.Int64Codec)}
		return op, o.err
	}}
}

// q19: ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) <= 10,
// ties ranked in the order the bids came: a bid's rank is one more than
// the bids before it on its auction at its price or higher. A bid that
// enters the ten is emitted with its rank.
func q19() Query {
	return Query{Name: "q19", Stateful: true, Keys: oneKey(bidKey), Open: func(b *state.Backend) (Operator, error) {
		o := &opState{b: b, query: "q19"}
		op := q19Op{top: openValue(o, "top", state.BytesCodec)}
		return op, o.err
	}}
}
