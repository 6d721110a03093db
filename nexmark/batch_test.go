package nexmark

import (
	"fmt"
	"testing"
)

// The queries' outputs recomputed as a batch job over the whole list of
// events — grouping and joining as the SQL reads, no state, no timers, no
// watermarks — for the queries whose output does not depend on the order
// rows are made in (joins, and windows and sessions that emit once). The
// operators are checked against these (TestOperatorsMatchBatch), and the
// runner against the operators (TestQueriesMatchTheReference); so a
// mistake in an operator's windows, timers or join is caught even though
// the runner and Reference share the operator.

func batchQ3(evs []Event, out *Sink) {
	people := map[int64]*Person{}
	for _, e := range evs {
		if e.Kind == KindPerson {
			people[e.Person.ID] = e.Person
		}
	}
	for _, e := range evs {
		if e.Kind != KindAuction || e.Auction.Category != 10 {
			continue
		}
		if p := people[e.Auction.Seller]; p != nil && (p.State == "OR" || p.State == "ID" || p.State == "CA") {
			out.Emit(fmt.Sprintf("%s,%s,%s,%d", p.Name, p.City, p.State, e.Auction.ID))
		}
	}
}

func batchQ20(evs []Event, out *Sink) {
	auctions := map[int64]*Auction{}
	for _, e := range evs {
		if e.Kind == KindAuction {
			auctions[e.Auction.ID] = e.Auction
		}
	}
	for _, e := range evs {
		if e.Kind != KindBid {
			continue
		}
		b := e.Bid
		if a := auctions[b.Auction]; a != nil && a.Category == 10 {
			out.Emit(fmt.Sprintf("%d,%d,%d,%d,%d|%s|%d", b.Auction, b.Bidder, b.Price, b.DateTime, a.Category, a.ItemName, a.Seller))
		}
	}
}

func batchQ7(evs []Event, out *Sink) {
	highest := map[int64]int64{}
	for _, e := range evs {
		if e.Kind == KindBid {
			w := (e.Bid.DateTime/10_000 + 1) * 10_000
			highest[w] = max(highest[w], e.Bid.Price)
		}
	}
	for _, e := range evs {
		if e.Kind == KindBid && e.Bid.Price == highest[(e.Bid.DateTime/10_000+1)*10_000] {
			b := e.Bid
			out.Emit(fmt.Sprintf("%d,%d,%d,%d,%s", b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra))
		}
	}
}

func batchQ5(evs []Event, out *Sink) {
	type aw struct{ auction, end int64 }
	counts := map[aw]int64{}
	for _, e := range evs {
		if e.Kind != KindBid {
			continue
		}
		// Windows [start, start+10 s) with start a multiple of 2 s.
		for start := (e.Bid.DateTime / 2000) * 2000; start > e.Bid.DateTime-10_000; start -= 2000 {
			counts[aw{e.Bid.Auction, start + 10_000}]++
		}
	}
	most := map[int64]int64{}
	for k, n := range counts {
		most[k.end] = max(most[k.end], n)
	}
	for k, n := range counts {
		if n == most[k.end] {
			out.Emit(fmt.Sprintf("%d,%d,%d", k.auction, n, k.end))
		}
	}
}

func batchQ8(evs []Event, out *Sink) {
	type pw struct{ id, end int64 }
	sellers := map[pw]bool{}
	for _, e := range evs {
		if e.Kind == KindAuction {
			sellers[pw{e.Auction.Seller, (e.Auction.DateTime/10_000 + 1) * 10_000}] = true
		}
	}
	for _, e := range evs {
		if e.Kind != KindPerson {
			continue
		}
		end := (e.Person.DateTime/10_000 + 1) * 10_000
		if sellers[pw{e.Person.ID, end}] {
			out.Emit(fmt.Sprintf("%d,%s,%d", e.Person.ID, e.Person.Name, end-10_000))
		}
	}
}

func batchQ11(evs []Event, out *Sink) {
	times := map[int64][]int64{}
	for _, e := range evs {
		if e.Kind == KindBid {
			times[e.Bid.Bidder] = append(times[e.Bid.Bidder], e.Bid.DateTime) // in time order: events are
		}
	}
	for bidder, ts := range times {
		start, n := ts[0], int64(0)
		for i, t := range ts {
			if i > 0 && t >= ts[i-1]+10_000 {
				out.Emit(fmt.Sprintf("%d,%d,%d,%d", bidder, n, start, ts[i-1]+10_000))
				start, n = t, 0
			}
			n++
		}
		out.Emit(fmt.Sprintf("%d,%d,%d,%d", bidder, n, start, ts[len(ts)-1]+10_000))
	}
}

func batchQ12(evs []Event, out *Sink) {
	type bw struct{ bidder, end int64 }
	counts := map[bw]int64{}
	for _, e := range evs {
		if e.Kind == KindBid {
			counts[bw{e.Bid.Bidder, (e.Bid.DateTime/10_000 + 1) * 10_000}]++
		}
	}
	for k, n := range counts {
		out.Emit(fmt.Sprintf("%d,%d,%d,%d", k.bidder, n, k.end-10_000, k.end))
	}
}

// TestOperatorsMatchBatch: the operators (run by Reference, event by
// event, with timers and watermarks) give the rows of the batch
// recomputation, at two event rates (windows closing mid-run, and few
// windows).
func TestOperatorsMatchBatch(t *testing.T) {
	batch := map[string]func([]Event, *Sink){"q3": batchQ3, "q5": batchQ5, "q7": batchQ7, "q8": batchQ8, "q11": batchQ11, "q12": batchQ12, "q20": batchQ20}
	for _, gen := range []GenConfig{{Rate: 1000}, {Rate: 200, InFlightAuctions: 20, ActivePeople: 50}} {
		const events = 30_000
		evs := make([]Event, events)
		for id := range evs {
			evs[id] = gen.Generate(int64(id))
		}
		for name, f := range batch {
			var want Sink
			f(evs, &want)
			got, err := Reference(Queries[name], gen, events)
			if err != nil {
				t.Fatal(err)
			}
			if want.Rows == 0 || got != want {
				t.Errorf("rate %d, %s: operator %s, batch %s", gen.Rate, name, got.Checksum(), want.Checksum())
			}
		}
	}
}
