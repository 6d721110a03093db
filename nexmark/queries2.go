package nexmark

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"time"
)

// hourOf is the hour of day (UTC) of a unix-ms time.
func hourOf(ms int64) int { return time.UnixMilli(ms).UTC().Hour() }

// dayOf is the date (UTC) of a unix-ms time, as the SQL's DATE_FORMAT.
func dayOf(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02") }

// urlPart is the SQL's SPLIT_INDEX(url, '/', i).
func urlPart(url string, i int) string {
	parts := strings.Split(url, "/")
	if i < len(parts) {
		return parts[i]
	}
	return ""
}

// channelID is the SQL's REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
// on the query part of the URL.
func channelID(url string) (string, bool) {
	q := url
	if i := strings.IndexByte(url, '?'); i >= 0 {
		q = url[i+1:]
	}
	for _, kv := range strings.Split(q, "&") {
		if v, ok := strings.CutPrefix(kv, "channel_id="); ok {
			return v, true
		}
	}
	return "", false
}

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

// countDistinct updates a group's counts with one bid. seen holds, per
// (group, "b"|"a", id), the ranks already counted for that bidder or
// auction (a bit mask; bit 0: counted at all).
func countDistinct(name string, group []byte, b *Bid, s Store, out *Out) error {
	v, ok, err := s.Get(name, group)
	if err != nil {
		return err
	}
	var c distinctCounts
	if ok {
		if len(v) != 8*12 {
			return fmt.Errorf("nexmark: %s: a stored count of %d bytes", name, len(v))
		}
		for i := range 4 {
			c.bids[i] = int64(binary.BigEndian.Uint64(v[8*i:]))
			c.bidders[i] = int64(binary.BigEndian.Uint64(v[32+8*i:]))
			c.auctions[i] = int64(binary.BigEndian.Uint64(v[64+8*i:]))
		}
	}
	r := rankOf(b.Price)
	c.bids[0]++
	c.bids[r]++
	for _, d := range []struct {
		kind  string
		id    int64
		count *[4]int64
	}{{"b", b.Bidder, &c.bidders}, {"a", b.Auction, &c.auctions}} {
		k := append(append(append([]byte(nil), group...), d.kind...), i64(d.id)...)
		m, ok, err := s.Get(name+"-seen", k)
		if err != nil {
			return err
		}
		mask := byte(0)
		if ok && len(m) == 1 {
			mask = m[0]
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
	nv := make([]byte, 0, 96)
	for _, arr := range [][4]int64{c.bids, c.bidders, c.auctions} {
		for _, x := range arr {
			nv = binary.BigEndian.AppendUint64(nv, uint64(x))
		}
	}
	s.Put(name, group, nv)
	out.Emit(fmt.Sprintf("%s,%v,%v,%v", group, c.bids, c.bidders, c.auctions))
	return nil
}

func wantDistinct(name string, group []byte, b *Bid, s Store) {
	s.Want(name, group)
	s.Want(name+"-seen", append(append(append([]byte(nil), group...), 'b'), i64(b.Bidder)...))
	s.Want(name+"-seen", append(append(append([]byte(nil), group...), 'a'), i64(b.Auction)...))
}

// dayKey partitions q15 by day: the day's number.
func dayKey(e Event) (int64, bool) {
	if e.Kind != KindBid {
		return 0, false
	}
	return e.Bid.DateTime / 86_400_000, true
}

// top10 is q19's state for an auction: its ten highest bids, highest first.
type topBid struct {
	price, dateTime, bidder int64
}

func decodeTop(v []byte) []topBid {
	var t []topBid
	for len(v) >= 24 {
		t = append(t, topBid{int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:])), int64(binary.BigEndian.Uint64(v[16:]))})
		v = v[24:]
	}
	return t
}

func encodeTop(t []topBid) []byte {
	v := make([]byte, 0, 24*len(t))
	for _, b := range t {
		v = binary.BigEndian.AppendUint64(v, uint64(b.price))
		v = binary.BigEndian.AppendUint64(v, uint64(b.dateTime))
		v = binary.BigEndian.AppendUint64(v, uint64(b.bidder))
	}
	return v
}

func init() {
	// q13: bids joined with a bounded side table on auction mod 10,000
	// (the side table: key k has value "value-k", made here as the
	// reference reads it from a file).
	Queries["q13"] = Query{Name: "q13", Key: bidKey, Wants: noWants, Process: func(e Event, _ Store, out *Out) error {
		b := e.Bid
		out.Emit(fmt.Sprintf("%d,%d,%d,%d,value-%d", b.Auction, b.Bidder, b.Price, b.DateTime, b.Auction%10_000))
		return nil
	}}
	// q14: a filter and computed columns (price in euros between 1,000,000
	// and 50,000,000, the time of day, the count of 'c' in extra).
	Queries["q14"] = Query{Name: "q14", Key: bidKey, Wants: noWants, Process: func(e Event, _ Store, out *Out) error {
		b := e.Bid
		euros := float64(b.Price) * 0.908
		if euros <= 1_000_000 || euros >= 50_000_000 {
			return nil
		}
		h := hourOf(b.DateTime)
		kind := "otherTime"
		switch {
		case h >= 8 && h <= 18:
			kind = "dayTime"
		case h <= 6 || h >= 20:
			kind = "nightTime"
		}
		out.Emit(fmt.Sprintf("%d,%d,%.3f,%s,%d,%s,%d", b.Auction, b.Bidder, euros, kind, b.DateTime, b.Extra, strings.Count(b.Extra, "c")))
		return nil
	}}
	// q21: the channel id of known channels, or from the URL.
	Queries["q21"] = Query{Name: "q21", Key: bidKey, Wants: noWants, Process: func(e Event, _ Store, out *Out) error {
		b := e.Bid
		id, ok := map[string]string{"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}[strings.ToLower(b.Channel)]
		if !ok {
			if id, ok = channelID(b.URL); !ok {
				return nil
			}
		}
		out.Emit(fmt.Sprintf("%d,%d,%d,%s,%s", b.Auction, b.Bidder, b.Price, b.Channel, id))
		return nil
	}}
	// q22: the URL's first three directories.
	Queries["q22"] = Query{Name: "q22", Key: bidKey, Wants: noWants, Process: func(e Event, _ Store, out *Out) error {
		b := e.Bid
		out.Emit(fmt.Sprintf("%d,%d,%d,%s,%s,%s,%s", b.Auction, b.Bidder, b.Price, b.Channel, urlPart(b.URL, 3), urlPart(b.URL, 4), urlPart(b.URL, 5)))
		return nil
	}}
	// q15: per day, bids and distinct bidders and auctions, overall and by
	// price rank, updated with every bid. One group per day: one worker
	// holds a day's state.
	Queries["q15"] = Query{Name: "q15", Stateful: true, States: map[string]bool{"day": false, "day-seen": false},
		Key:   dayKey,
		Wants: func(e Event, s Store) { wantDistinct("day", []byte(dayOf(e.Bid.DateTime)), e.Bid, s) },
		Process: func(e Event, s Store, out *Out) error {
			return countDistinct("day", []byte(dayOf(e.Bid.DateTime)), e.Bid, s, out)
		}}
	// q16: the same per channel and day.
	Queries["q16"] = Query{Name: "q16", Stateful: true, States: map[string]bool{"chday": false, "chday-seen": false},
		Key: func(e Event) (int64, bool) {
			if e.Kind != KindBid {
				return 0, false
			}
			return int64(len(e.Bid.Channel))*1_000_003 + int64(e.Bid.Channel[len(e.Bid.Channel)-1]), true
		},
		Wants: func(e Event, s Store) {
			wantDistinct("chday", []byte(e.Bid.Channel+"|"+dayOf(e.Bid.DateTime)), e.Bid, s)
		},
		Process: func(e Event, s Store, out *Out) error {
			return countDistinct("chday", []byte(e.Bid.Channel+"|"+dayOf(e.Bid.DateTime)), e.Bid, s, out)
		}}
	// q19: the ten highest bids of each auction (ties: the earlier bid
	// first); a bid that enters them is emitted with its rank.
	Queries["q19"] = Query{Name: "q19", Stateful: true, States: map[string]bool{"top": false},
		Key:   bidKey,
		Wants: func(e Event, s Store) { s.Want("top", i64(e.Bid.Auction)) },
		Process: func(e Event, s Store, out *Out) error {
			b := e.Bid
			v, _, err := s.Get("top", i64(b.Auction))
			if err != nil {
				return err
			}
			top := append(decodeTop(v), topBid{b.Price, b.DateTime, b.Bidder})
			sort.SliceStable(top, func(i, j int) bool { return top[i].price > top[j].price })
			rank := -1
			for i, t := range top {
				if t == (topBid{b.Price, b.DateTime, b.Bidder}) {
					rank = i + 1
					break
				}
			}
			if len(top) > 10 {
				top = top[:10]
			}
			if rank <= 10 {
				s.Put("top", i64(b.Auction), encodeTop(top))
				out.Emit(fmt.Sprintf("%d,%d,%d,%d,%d", b.Auction, b.Bidder, b.Price, b.DateTime, rank))
			}
			return nil
		}}
}
