package nexmark

import (
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// TestGenerator: the 1 : 3 : 46 mix, ids derived from event ids, the same
// event every time it is made, hot auctions and bidders about as often as
// the reference makes them.
func TestGenerator(t *testing.T) {
	var gen GenConfig
	kinds := map[Kind]int{}
	hotAuction, hotBidder, bids := 0, 0, 0
	for id := int64(0); id < 50_000; id++ {
		e := gen.Generate(id)
		kinds[e.Kind]++
		again := gen.Generate(id)
		if e.Time() != again.Time() || e.Kind != again.Kind {
			t.Fatalf("event %d differs when made again", id)
		}
		switch e.Kind {
		case KindPerson:
			if e.Person.ID != lastBase0PersonID(id)+firstPersonID {
				t.Fatalf("person %d: id %d", id, e.Person.ID)
			}
		case KindAuction:
			if e.Auction.ID != lastBase0AuctionID(id)+firstAuctionID {
				t.Fatalf("auction %d: id %d", id, e.Auction.ID)
			}
		case KindBid:
			bids++
			if (e.Bid.Auction-firstAuctionID)%hotAuctionRatio == 0 && e.Bid.Auction-firstAuctionID == (lastBase0AuctionID(id)/2)*2 {
				hotAuction++
			}
			if (e.Bid.Bidder-firstPersonID)%hotBidderRatio == 1 {
				hotBidder++
			}
		}
	}
	if kinds[KindPerson] != 1000 || kinds[KindAuction] != 3000 || kinds[KindBid] != 46000 {
		t.Errorf("mix %v, want 1000 : 3000 : 46000", kinds)
	}
	if f := float64(hotAuction) / float64(bids); f < 0.45 || f > 0.6 {
		t.Errorf("%.2f of bids on the hot auction, want about 1/2", f)
	}
	if f := float64(hotBidder) / float64(bids); f < 0.7 || f > 0.85 {
		t.Errorf("%.2f of bids by hot bidders, want about 3/4", f)
	}
	if a, b := (GenConfig{Seed: 1}).Generate(77), (GenConfig{Seed: 2}).Generate(77); a.Bid.Price == b.Bid.Price && a.Bid.Channel == b.Bid.Channel && a.Bid.Extra == b.Bid.Extra {
		t.Error("the seed changes nothing")
	}
}

// TestQueriesMatchTheReference: every query on state, on io_uring and on
// syscalls, 4 workers in mini-batches, gives the rows of the in-memory
// reference.
func TestQueriesMatchTheReference(t *testing.T) {
	const events = 30_000
	var gen GenConfig
	for _, name := range QueryNames() {
		want, err := Reference(Queries[name], gen, events)
		if err != nil {
			t.Fatal(err)
		}
		if want.Rows == 0 {
			t.Fatalf("%s: the reference emits nothing over %d events", name, events)
		}
		for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
			res, err := Run(RunConfig{Query: name, Events: events, Batch: 500, Dir: testdir.Direct(t), Cache: 256 << 10, IOMode: mode})
			if err != nil {
				t.Fatalf("%s %s: %v", name, mode, err)
			}
			if res.Sink != want {
				t.Errorf("%s %s: %s, reference %s", name, mode, res.Sink.Checksum(), want.Checksum())
			}
			if Queries[name].Stateful && res.MultiGets == 0 {
				t.Errorf("%s %s: no MultiGet", name, mode)
			}
		}
	}
}

// TestKillAndRestore: a run stopped mid-way (a crash after its last
// checkpoint), restored from the checkpoints and replayed from their
// positions, ends with exactly the reference's rows.
func TestKillAndRestore(t *testing.T) {
	const events = 40_000
	var gen GenConfig
	for _, name := range []string{"q3", "q17", "q20"} {
		want, err := Reference(Queries[name], gen, events)
		if err != nil {
			t.Fatal(err)
		}
		dir := testdir.Direct(t)
		cfg := RunConfig{Query: name, Events: events, Batch: 100, Checkpoint: 400, Dir: dir, Cache: 256 << 10}
		cfg.StopAt = 27_123
		if _, err := Run(cfg); err != nil {
			t.Fatal(err)
		}
		cfg.StopAt, cfg.Restore = 0, true
		res, err := Run(cfg)
		if err != nil {
			t.Fatalf("%s: restore: %v", name, err)
		}
		if res.Sink != want {
			t.Errorf("%s: after the restore %s, reference %s", name, res.Sink.Checksum(), want.Checksum())
		}
	}
}
