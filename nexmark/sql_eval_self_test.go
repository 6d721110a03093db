package nexmark

import (
	"slices"
	"testing"
	"time"
)

// Hand-built checks of the tricky cases of the batch SQL oracle.

// sqlSeq numbers the events in slice order (their arrival order).
func sqlSeq(evs ...Event) []Event {
	for i := range evs {
		evs[i].ID = int64(i + 1)
	}
	return evs
}

// sqlBidEv is a bid with channel "c", url "u" and extra "x".
func sqlBidEv(auction, bidder, price, t int64) Event {
	return Event{Kind: KindBid, Bid: &Bid{Auction: auction, Bidder: bidder, Price: price,
		Channel: "c", URL: "u", DateTime: t, Extra: "x"}}
}

func sqlBidEvFull(b Bid) Event { return Event{Kind: KindBid, Bid: &b} }

func sqlAucEv(a Auction) Event { return Event{Kind: KindAuction, Auction: &a} }

func sqlPerEv(p Person) Event { return Event{Kind: KindPerson, Person: &p} }

// sqlCheckRows compares exact row lists; when ordered is false only the
// multisets must match.
func sqlCheckRows(t *testing.T, query string, evs []Event, ordered bool, want ...string) {
	t.Helper()
	got := evalRows(query, evs)
	g, w := slices.Clone(got), slices.Clone(want)
	if !ordered {
		slices.Sort(g)
		slices.Sort(w)
	}
	if !slices.Equal(g, w) {
		t.Errorf("%s rows:\n got  %q\n want %q", query, got, want)
	}
	// evalSQL must emit the same rows.
	var s1, s2 Sink
	if !evalSQL(query, evs, &s1) {
		t.Fatalf("evalSQL(%s) reported unknown query", query)
	}
	for _, r := range want {
		s2.Emit(r)
	}
	if s1 != s2 {
		t.Errorf("%s sink %+v, want %+v", query, s1, s2)
	}
}

func TestSQLEvalUnknownQuery(t *testing.T) {
	var s Sink
	for _, q := range []string{"q6", "q23", "nope"} {
		if evalSQL(q, nil, &s) {
			t.Errorf("evalSQL(%q) = true", q)
		}
	}
	for q := range sqlQueries {
		if !evalSQL(q, nil, &s) {
			t.Errorf("evalSQL(%q) = false", q)
		}
	}
	if len(sqlQueries) != 22 || s.Rows != 0 {
		t.Errorf("%d queries, %d rows on empty input", len(sqlQueries), s.Rows)
	}
}

func TestSQLEvalQ19IdenticalTwins(t *testing.T) {
	var evs []Event
	// Auction 2: two bids identical in every column get ranks 1 and 2.
	evs = append(evs, sqlBidEv(2, 7, 100, 1000), sqlBidEv(2, 7, 100, 1000))
	// Auction 1: eight bids at 200 take ranks 1..8, then three identical
	// twins at 100 get ranks 9, 10 and 11; the third is not emitted.
	for i := int64(0); i < 8; i++ {
		evs = append(evs, sqlBidEv(1, 10+i, 200, 1000))
	}
	evs = append(evs, sqlBidEv(1, 7, 100, 1000), sqlBidEv(1, 7, 100, 1000), sqlBidEv(1, 7, 100, 1000))
	// A higher bid still gets rank 1 and is emitted (rows it pushes down are not).
	evs = append(evs, sqlBidEv(1, 99, 300, 1001))
	want := []string{
		"2,7,100,c,u,1000,x,1",
		"2,7,100,c,u,1000,x,2",
	}
	for i := int64(0); i < 8; i++ {
		want = append(want, "1,"+sqlItoa(10+i)+",200,c,u,1000,x,"+sqlItoa(i+1))
	}
	want = append(want, "1,7,100,c,u,1000,x,9", "1,7,100,c,u,1000,x,10", "1,99,300,c,u,1001,x,1")
	sqlCheckRows(t, "q19", sqlSeq(evs...), true, want...)
}

func TestSQLEvalQ11TouchingSessions(t *testing.T) {
	evs := sqlSeq(
		sqlBidEv(1, 1, 5, 0),
		sqlBidEv(1, 2, 5, 0),
		sqlBidEv(1, 1, 5, 10_000), // touches [0, 10000): same session
		sqlBidEv(1, 2, 5, 10_001), // 1 ms past the end: new session
	)
	sqlCheckRows(t, "q11", evs, false,
		"1,2,0,20000",
		"2,1,0,10000",
		"2,1,10001,20001",
	)
}

func TestSQLEvalQ7BidAtWindowEnd(t *testing.T) {
	// Window [0,10000) max 80; window [10000,20000) max 90. The bid at
	// exactly 10000 with price 80 matches window [0,10000) through the
	// inclusive upper bound of BETWEEN.
	evs := sqlSeq(
		sqlBidEv(1, 1, 50, 1000),
		sqlBidEv(2, 2, 80, 5000),
		sqlBidEv(3, 3, 80, 10_000),
		sqlBidEv(4, 4, 90, 12_000),
	)
	sqlCheckRows(t, "q7", evs, false,
		"2,80,2,5000,x",
		"3,80,3,10000,x",
		"4,90,4,12000,x",
	)

	// Both windows have max 80: the bid at 10000 matches both and is
	// emitted twice. The bid at 20000 is the max of its own window only.
	evs = sqlSeq(
		sqlBidEv(1, 1, 80, 1000),
		sqlBidEv(2, 2, 80, 10_000),
		sqlBidEv(3, 3, 70, 15_000),
		sqlBidEv(4, 4, 70, 20_000),
	)
	sqlCheckRows(t, "q7", evs, false,
		"1,80,1,1000,x",
		"2,80,2,10000,x",
		"2,80,2,10000,x",
		"4,70,4,20000,x",
	)
}

func TestSQLEvalQ1Decimals(t *testing.T) {
	evs := sqlSeq(
		sqlBidEv(1, 2, 1234, 10),
		sqlBidEv(1, 2, 5, 11),
		sqlBidEv(1, 2, 0, 12),
		sqlBidEv(1, 2, 1000, 13),
		sqlBidEv(1, 2, 1101322, 14),
	)
	sqlCheckRows(t, "q1", evs, true,
		"1,2,1120.472,10,x",
		"1,2,4.540,11,x",
		"1,2,0.000,12,x",
		"1,2,908.000,13,x",
		"1,2,1000000.376,14,x",
	)
}

func TestSQLEvalQ14DecimalsAndHours(t *testing.T) {
	day := time.Date(2015, 7, 15, 0, 0, 0, 0, time.UTC).UnixMilli()
	at := func(h, m int) int64 { return day + int64(h)*3_600_000 + int64(m)*60_000 }
	b := func(price, t int64, extra string) Event {
		return sqlBidEvFull(Bid{Auction: 1, Bidder: 2, Price: price, Channel: "c", URL: "u", DateTime: t, Extra: extra})
	}
	evs := sqlSeq(
		b(1101321, at(0, 0), "x"),      // 999999.468: not > 1000000
		b(1101322, at(6, 59), "ccabc"), // 1000000.376
		b(2000000, at(7, 0), ""),
		b(55066079, at(8, 0), "x"), // 49999999.732
		b(55066080, at(9, 0), "x"), // 50000000.640: not < 50000000
		b(2000000, at(18, 59), "x"),
		b(2000000, at(19, 0), "x"),
		b(2000000, at(20, 0), "x"),
	)
	sqlCheckRows(t, "q14", evs, true,
		"1,2,1000000.376,nightTime,"+sqlItoa(at(6, 59))+",ccabc,3",
		"1,2,1816000.000,otherTime,"+sqlItoa(at(7, 0))+",,0",
		"1,2,49999999.732,dayTime,"+sqlItoa(at(8, 0))+",x,0",
		"1,2,1816000.000,dayTime,"+sqlItoa(at(18, 59))+",x,0",
		"1,2,1816000.000,otherTime,"+sqlItoa(at(19, 0))+",x,0",
		"1,2,1816000.000,nightTime,"+sqlItoa(at(20, 0))+",x,0",
	)
}

func TestSQLEvalQ21ChannelID(t *testing.T) {
	b := func(channel, url string) Event {
		return sqlBidEvFull(Bid{Auction: 1, Bidder: 2, Price: 3, Channel: channel, URL: url, DateTime: 4, Extra: "x"})
	}
	evs := sqlSeq(
		b("Apple", "https://x/?channel_id=zz"),
		b("GOOGLE", "u"),
		b("FaceBook", "u"),
		b("baidu", "u"),
		b("other", "https://www.nexmark.com/a/b/c/item.htm?query=1&channel_id=123"),
		b("other", "channel_id=77&x=1"),                        // ^ alternative
		b("other", "https://x/?channel_id=5"),                  // preceded by '?': NULL, dropped
		b("other", "a=1&xchannel_id=4"),                        // not a channel_id key: dropped
		b("other", "https://x/?a=1&channel_id="),               // empty but not NULL
		b("other", "https://x/?a=1&channel_id=8&channel_id=9"), // first match
	)
	sqlCheckRows(t, "q21", evs, true,
		"1,2,3,Apple,0",
		"1,2,3,GOOGLE,1",
		"1,2,3,FaceBook,2",
		"1,2,3,baidu,3",
		"1,2,3,other,123",
		"1,2,3,other,77",
		"1,2,3,other,",
		"1,2,3,other,8",
	)
}

func TestSQLEvalQ22SplitIndex(t *testing.T) {
	b := func(url string) Event {
		return sqlBidEvFull(Bid{Auction: 1, Bidder: 2, Price: 3, Channel: "ch", URL: url, DateTime: 4})
	}
	evs := sqlSeq(
		b("https://www.nexmark.com/a/b/c/item.htm"),
		b("https://x.com/a"),
		b("https://x.com/a//b"),
	)
	sqlCheckRows(t, "q22", evs, true,
		"1,2,3,ch,a,b,c",
		"1,2,3,ch,a,,",
		"1,2,3,ch,a,,b",
	)
}

// sqlJoinEvents: a bid that arrives before its auction with an equal dateTime
// (joined when the auction arrives), bids outside [dateTime, expires], ties.
func sqlJoinEvents() []Event {
	a1 := Auction{ID: 1, ItemName: "i1", Description: "d1", InitialBid: 5, Reserve: 6,
		DateTime: 1000, Expires: 5000, Seller: 9, Category: 3, Extra: "e1"}
	a2 := Auction{ID: 2, ItemName: "i2", Description: "d2", InitialBid: 7, Reserve: 8,
		DateTime: 2000, Expires: 9000, Seller: 9, Category: 3, Extra: "e2"}
	bid := func(auction, bidder, price, t int64) Event {
		return sqlBidEvFull(Bid{Auction: auction, Bidder: bidder, Price: price, Channel: "c", URL: "u",
			DateTime: t, Extra: "b" + sqlItoa(bidder)})
	}
	return sqlSeq(
		bid(1, 1, 1000, 500), // before a1 starts: never joined
		bid(1, 2, 10, 1000),  // arrives before a1, same dateTime: joined when a1 arrives
		sqlAucEv(a1),
		sqlAucEv(a2),
		bid(1, 3, 20, 2000),
		bid(2, 4, 41, 2500),
		bid(2, 5, 41, 2500),  // same price and time: earlier arrival stays
		bid(1, 6, 20, 3000),  // same price, later: no change
		bid(1, 7, 100, 6000), // after a1 expires
		bid(3, 8, 50, 7000),  // auction 3 never arrives
	)
}

func TestSQLEvalQ4JoinOrder(t *testing.T) {
	sqlCheckRows(t, "q4", sqlJoinEvents(), true,
		"3,10",
		"3,20",
		"3,30", // (20 + 41) / 2 truncated
	)
}

func TestSQLEvalQ9JoinOrder(t *testing.T) {
	a1 := "1,i1,d1,5,6,1000,5000,9,3,e1,"
	a2 := "2,i2,d2,7,8,2000,9000,9,3,e2,"
	sqlCheckRows(t, "q9", sqlJoinEvents(), true,
		a1+"1,2,10,1000,b2",
		a1+"1,3,20,2000,b3",
		a2+"2,4,41,2500,b4",
	)
}

func TestSQLEvalQ5Hop(t *testing.T) {
	const base = 100_000
	evs := sqlSeq(
		sqlBidEv(1, 1, 1, base),
		sqlBidEv(1, 1, 1, base+1000),
		sqlBidEv(2, 1, 1, base+3000),
		sqlBidEv(2, 1, 1, base+11_000),
		sqlBidEv(3, 1, 1, base+11_000),
	)
	// Windows starting base-8000 .. base hold two bids of auction 1 (and
	// one of auction 2 from base-6000 on); base+2000 holds a2:2, a3:1;
	// base+4000 .. base+10000 hold a2:1, a3:1.
	var want []string
	for range 5 {
		want = append(want, "1,2")
	}
	want = append(want, "2,2")
	for range 4 {
		want = append(want, "2,1", "3,1")
	}
	sqlCheckRows(t, "q5", evs, false, want...)
}

func TestSQLEvalQ8(t *testing.T) {
	evs := sqlSeq(
		sqlPerEv(Person{ID: 1, Name: "p1", DateTime: 1000}),
		sqlPerEv(Person{ID: 1, Name: "p1", DateTime: 5000}), // same group
		sqlPerEv(Person{ID: 2, Name: "p2", DateTime: 9000}),
		sqlAucEv(Auction{ID: 10, Seller: 1, DateTime: 9999}),
		sqlAucEv(Auction{ID: 11, Seller: 1, DateTime: 9999}),
		sqlAucEv(Auction{ID: 12, Seller: 2, DateTime: 10_000}), // next window
	)
	sqlCheckRows(t, "q8", evs, false, "1,p1,0")
}

func TestSQLEvalQ3Q20JoinEitherOrder(t *testing.T) {
	evs := sqlSeq(
		sqlAucEv(Auction{ID: 1, ItemName: "it", Description: "de", InitialBid: 2, Reserve: 3,
			DateTime: 1, Expires: 99, Seller: 5, Category: 10, Extra: "ae"}),
		sqlAucEv(Auction{ID: 2, Seller: 5, Category: 9, DateTime: 1}),
		sqlAucEv(Auction{ID: 3, Seller: 6, Category: 10, DateTime: 1}),
		sqlPerEv(Person{ID: 5, Name: "n5", City: "c5", State: "OR", DateTime: 2}), // after its auction
		sqlPerEv(Person{ID: 6, Name: "n6", City: "c6", State: "WA", DateTime: 2}),
		sqlBidEv(4, 7, 8, 3), // before auction 4
		sqlAucEv(Auction{ID: 4, ItemName: "i4", Description: "d4", InitialBid: 1, Reserve: 1,
			DateTime: 4, Expires: 50, Seller: 5, Category: 10, Extra: "a4"}),
		sqlBidEv(1, 7, 9, 5),
		sqlBidEv(2, 7, 9, 5), // category 9
	)
	sqlCheckRows(t, "q3", evs, false, "n5,c5,OR,1", "n5,c5,OR,4")
	sqlCheckRows(t, "q20", evs, false,
		"4,7,8,c,u,3,x,i4,d4,1,1,4,50,5,10,a4",
		"1,7,9,c,u,5,x,it,de,2,3,1,99,5,10,ae",
	)
}

func TestSQLEvalQ10DateFormat(t *testing.T) {
	ts := time.Date(2015, 7, 15, 0, 1, 59, 999_000_000, time.UTC).UnixMilli()
	sqlCheckRows(t, "q10", sqlSeq(sqlBidEv(1, 2, 3, ts)), true,
		"1,2,3,"+sqlItoa(ts)+",x,2015-07-15,00:01")
}

func TestSQLEvalQ12Tumble(t *testing.T) {
	evs := sqlSeq(sqlBidEv(1, 1, 1, 0), sqlBidEv(2, 1, 1, 9999), sqlBidEv(1, 2, 1, 9999), sqlBidEv(1, 1, 1, 10_000))
	sqlCheckRows(t, "q12", evs, false, "1,2,0,10000", "2,1,0,10000", "1,1,10000,20000")
}

func TestSQLEvalQ13SideInput(t *testing.T) {
	evs := sqlSeq(sqlBidEv(12345, 2, 3, 4), sqlBidEv(20000, 2, 3, 4))
	sqlCheckRows(t, "q13", evs, true, "12345,2,3,4,2345", "20000,2,3,4,0")
}

func TestSQLEvalQ15Q16Q17Updates(t *testing.T) {
	d := time.Date(2015, 7, 15, 23, 59, 0, 0, time.UTC).UnixMilli()
	evs := sqlSeq(
		sqlBidEvFull(Bid{Auction: 1, Bidder: 1, Price: 5, Channel: "A", DateTime: d}),
		sqlBidEvFull(Bid{Auction: 1, Bidder: 1, Price: 20_000, Channel: "A", DateTime: d}),
		sqlBidEvFull(Bid{Auction: 2, Bidder: 2, Price: 2_000_000, Channel: "B", DateTime: d + 30_000}),
		sqlBidEvFull(Bid{Auction: 1, Bidder: 1, Price: 6, Channel: "A", DateTime: d + 60_000}), // next day
	)
	sqlCheckRows(t, "q15", evs, true,
		"2015-07-15,1,1,0,0,1,1,0,0,1,1,0,0",
		"2015-07-15,2,1,1,0,1,1,1,0,1,1,1,0",
		"2015-07-15,3,1,1,1,2,1,1,1,2,1,1,1",
		"2015-07-16,1,1,0,0,1,1,0,0,1,1,0,0",
	)
	sqlCheckRows(t, "q16", evs, true,
		"A,2015-07-15,23:59,1,1,0,0,1,1,0,0,1,1,0,0",
		"A,2015-07-15,23:59,2,1,1,0,1,1,1,0,1,1,1,0",
		"B,2015-07-15,23:59,1,0,0,1,1,0,0,1,1,0,0,1",
		"A,2015-07-16,00:00,1,1,0,0,1,1,0,0,1,1,0,0",
	)
	sqlCheckRows(t, "q17", evs, true,
		"1,2015-07-15,1,1,0,0,5,5,5,5",
		"1,2015-07-15,2,1,1,0,5,20000,10002,20005",
		"2,2015-07-15,1,0,0,1,2000000,2000000,2000000,2000000",
		"1,2015-07-16,1,1,0,0,6,6,6,6",
	)
}

func TestSQLEvalQ16MinuteIsStringMax(t *testing.T) {
	d := time.Date(2015, 7, 15, 9, 59, 0, 0, time.UTC).UnixMilli()
	evs := sqlSeq(
		sqlBidEvFull(Bid{Auction: 1, Bidder: 1, Price: 5, Channel: "A", DateTime: d}),
		sqlBidEvFull(Bid{Auction: 1, Bidder: 1, Price: 5, Channel: "A", DateTime: d + 60_000}),
	)
	sqlCheckRows(t, "q16", evs, true,
		"A,2015-07-15,09:59,1,1,0,0,1,1,0,0,1,1,0,0",
		"A,2015-07-15,10:00,2,2,0,0,1,1,0,0,1,1,0,0",
	)
}

func TestSQLEvalQ18LastByTime(t *testing.T) {
	evs := sqlSeq(
		sqlBidEv(1, 1, 10, 100),
		sqlBidEv(1, 1, 11, 100), // tie: later arrival wins, emitted
		sqlBidEv(1, 2, 12, 150),
		sqlBidEv(1, 1, 13, 200),
	)
	// Out-of-order input (not produced by the generator) exercises the
	// "older bid emits nothing" rule.
	evs = append(evs, Event{ID: 99, Kind: KindBid, Bid: &Bid{Auction: 1, Bidder: 1, Price: 14, DateTime: 50}})
	sqlCheckRows(t, "q18", evs, true,
		"1,1,10,c,u,100,x",
		"1,1,11,c,u,100,x",
		"1,2,12,c,u,150,x",
		"1,1,13,c,u,200,x",
	)
}
