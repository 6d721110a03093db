package nexmark

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
)

// The updating aggregates: q15, q16 and q17 (per group, counts and prices
// updated with every bid), q18 (the last bid of each bidder on each
// auction) and q19 (the ten highest bids of each auction). Each emits the
// row of every update it makes, the group's new row, as it is made.

// distinctCounts is the state of q15 and q16 for one group: bids, and
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

// countDistinct updates a group's counts with one bid and returns them.
// seen holds, per (group, "b"|"a", id), the ranks already counted for
// that bidder or auction (a bit mask; bit 0: counted at all). With
// minute, the group's value also keeps the largest 'HH:mm' of its bids
// (q16's max(DATE_FORMAT(dateTime, 'HH:mm'))), which is returned.
func countDistinct(name string, group []byte, b *Bid, s Store, minute bool) (distinctCounts, string, error) {
	var c distinctCounts
	v, ok, err := s.Get(name, group)
	if err != nil {
		return c, "", err
	}
	want := countsSize
	if minute {
		want += 5
	}
	m := hourMinuteOf(b.DateTime)
	if ok {
		if len(v) != want {
			return c, "", fmt.Errorf("a stored %s count of %d bytes, want %d", name, len(v), want)
		}
		for i := range 4 {
			c.bids[i] = int64(binary.BigEndian.Uint64(v[8*i:]))
			c.bidders[i] = int64(binary.BigEndian.Uint64(v[32+8*i:]))
			c.auctions[i] = int64(binary.BigEndian.Uint64(v[64+8*i:]))
		}
		if minute {
			m = max(m, string(v[countsSize:]))
		}
	}
	r := rankOf(b.Price)
	c.bids[0]++
	c.bids[r]++
	for _, d := range []struct {
		kind  byte
		id    int64
		count *[4]int64
	}{{'b', b.Bidder, &c.bidders}, {'a', b.Auction, &c.auctions}} {
		k := seenKey(group, d.kind, d.id)
		mv, ok, err := s.Get(name+"-seen", k)
		if err != nil {
			return c, "", err
		}
		mask := byte(0)
		if ok && len(mv) == 1 {
			mask = mv[0]
		}
		if mask&1 == 0 {
			d.count[0]++
		}
		if mask&(1<<r) == 0 {
			d.count[r]++
		}
		if nm := mask | 1 | 1<<r; nm != mask {
			s.Put(name+"-seen", k, []byte{nm})
		}
	}
	nv := make([]byte, 0, want)
	for _, arr := range [][4]int64{c.bids, c.bidders, c.auctions} {
		for _, x := range arr {
			nv = binary.BigEndian.AppendUint64(nv, uint64(x))
		}
	}
	if minute {
		nv = append(nv, m...)
	}
	s.Put(name, group, nv)
	return c, m, nil
}

func seenKey(group []byte, kind byte, id int64) []byte {
	k := make([]byte, 0, len(group)+9)
	k = append(append(k, group...), kind)
	return binary.BigEndian.AppendUint64(k, uint64(id))
}

func wantDistinct(name string, group []byte, b *Bid, s Store) {
	s.Want(name, group)
	s.Want(name+"-seen", seenKey(group, 'b', b.Bidder))
	s.Want(name+"-seen", seenKey(group, 'a', b.Auction))
}

// dayKey partitions q15 by day: the day's number.
func dayKey(e Event) (int64, bool) {
	if e.Kind != KindBid {
		return 0, false
	}
	return e.Bid.DateTime / 86_400_000, true
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

// dayGroup and chdayGroup are the state keys of q15's and q16's groups:
// the partition key (the day's number; the channel's hash), then the
// group's columns.
func dayGroup(b *Bid) []byte {
	return append(i64(b.DateTime/86_400_000), dayOf(b.DateTime)...)
}

func chdayGroup(b *Bid) []byte {
	return append(append(append(i64(channelHash(b.Channel)), b.Channel...), '|'), dayOf(b.DateTime)...)
}

// q15: per day (DATE_FORMAT 'yyyy-MM-dd'), the bids and the distinct
// bidders and auctions, overall and by price rank. One group per day:
// one worker holds a day's state.
func q15() Query {
	return Query{Name: "q15", Stateful: true, States: map[string]bool{"day": false, "day-seen": false},
		Keys:  oneKey(dayKey),
		Wants: func(e Event, _ int64, s Store) { wantDistinct("day", dayGroup(e.Bid), e.Bid, s) },
		Process: func(e Event, _ int64, s Store, out *Out) error {
			c, _, err := countDistinct("day", dayGroup(e.Bid), e.Bid, s, false)
			if err != nil {
				return err
			}
			var r row
			out.emitRow(r.str(dayOf(e.Bid.DateTime)).counts(c))
			return nil
		}}
}

// q16: the same per channel and day, with the group's latest minute
// (max(DATE_FORMAT(dateTime, 'HH:mm'))).
func q16() Query {
	return Query{Name: "q16", Stateful: true, States: map[string]bool{"chday": false, "chday-seen": false},
		Keys:  oneKey(channelKey),
		Wants: func(e Event, _ int64, s Store) { wantDistinct("chday", chdayGroup(e.Bid), e.Bid, s) },
		Process: func(e Event, _ int64, s Store, out *Out) error {
			b := e.Bid
			c, minute, err := countDistinct("chday", chdayGroup(b), b, s, true)
			if err != nil {
				return err
			}
			var r row
			out.emitRow(r.str(b.Channel).str(dayOf(b.DateTime)).str(minute).counts(c))
			return nil
		}}
}

// q17: per auction and day, the number of bids in three price ranks and
// the min, max, average (BIGINT: truncated) and sum of the prices.
func q17() Query {
	return Query{Name: "q17", Stateful: true, States: map[string]bool{"day": false},
		Keys:  oneKey(bidKey),
		Wants: func(e Event, _ int64, s Store) { s.Want("day", key2(e.Bid.Auction, e.Bid.DateTime/86_400_000)) },
		Process: func(e Event, _ int64, s Store, out *Out) error {
			b := e.Bid
			k := key2(b.Auction, b.DateTime/86_400_000)
			v, ok, err := s.Get("day", k)
			if err != nil {
				return err
			}
			var acc [7]int64 // total, rank1, rank2, rank3, min, max, sum
			if ok {
				if len(v) != 56 {
					return fmt.Errorf("a stored q17 accumulator of %d bytes", len(v))
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
			s.Put("day", k, u64s(acc[:]...))
			var r row
			r.int(b.Auction).str(dayOf(b.DateTime))
			for _, x := range acc[:6] {
				r.int(x)
			}
			out.emitRow(r.int(acc[6] / acc[0]).int(acc[6]))
			return nil
		}}
}

// q18: the last bid of each bidder on each auction (ROW_NUMBER() OVER
// (PARTITION BY bidder, auction ORDER BY dateTime DESC) = 1): a bid
// whose dateTime is not before the kept one's replaces it and is
// emitted.
func q18() Query {
	return Query{Name: "q18", Stateful: true, States: map[string]bool{"last": false},
		Keys:  oneKey(bidderKey),
		Wants: func(e Event, _ int64, s Store) { s.Want("last", key2(e.Bid.Bidder, e.Bid.Auction)) },
		Process: func(e Event, _ int64, s Store, out *Out) error {
			b := e.Bid
			k := key2(b.Bidder, b.Auction)
			v, ok, err := s.Get("last", k)
			if err != nil {
				return err
			}
			if ok && len(v) != 8 {
				return fmt.Errorf("a stored q18 time of %d bytes", len(v))
			}
			if ok && int64(binary.BigEndian.Uint64(v)) > b.DateTime {
				return nil
			}
			s.Put("last", k, i64(b.DateTime))
			var r row
			out.emitRow(r.bidRow(b))
			return nil
		}}
}

// q19: ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) <=
// 10, ties ranked in the order the bids came: a bid's rank is one more
// than the bids before it on its auction at its price or higher. A bid
// that enters the ten is emitted with its rank. An auction's state is
// the prices of its ten, highest first.
func q19() Query {
	return Query{Name: "q19", Stateful: true, States: map[string]bool{"top": false},
		Keys:  oneKey(bidKey),
		Wants: func(e Event, _ int64, s Store) { s.Want("top", i64(e.Bid.Auction)) },
		Process: func(e Event, _ int64, s Store, out *Out) error {
			b := e.Bid
			v, _, err := s.Get("top", i64(b.Auction))
			if err != nil {
				return err
			}
			if len(v)%8 != 0 || len(v) > 80 {
				return fmt.Errorf("a stored q19 top ten of %d bytes", len(v))
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
			s.Put("top", i64(b.Auction), top[:min(len(top), 80)])
			var r row
			out.emitRow(r.bidRow(b).int(int64(rank)))
			return nil
		}}
}
