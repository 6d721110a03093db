package nexmark

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
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
	// 1,000 events a second: 30 s of event time, so windows of 10 s and
	// sessions close while the run goes on, not only at its end.
	gen := GenConfig{Rate: 1000}
	for _, name := range QueryNames() {
		want, err := Reference(Queries[name], gen, events)
		if err != nil {
			t.Fatal(err)
		}
		if want.Rows == 0 {
			t.Fatalf("%s: the reference emits nothing over %d events", name, events)
		}
		for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
			res, err := Run(RunConfig{Query: name, Events: events, Batch: 500, Dir: testdir.Direct(t), Cache: 256 << 10, IOMode: mode, Gen: gen})
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
	gen := GenConfig{Rate: 1000}
	// q11 and q12 also restore their timers and watermarks.
	for _, name := range []string{"q3", "q11", "q12", "q17", "q20"} {
		want, err := Reference(Queries[name], gen, events)
		if err != nil {
			t.Fatal(err)
		}
		dir := testdir.Direct(t)
		cfg := RunConfig{Query: name, Events: events, Batch: 100, Checkpoint: 400, Dir: dir, Cache: 256 << 10, Gen: gen}
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

// TestFinalStageRefusesCheckpoints: a query with a final stage is not
// checkpointed (the workers' checkpoints are not aligned), and says so.
func TestFinalStageRefusesCheckpoints(t *testing.T) {
	for _, name := range []string{"q4", "q5"} {
		_, err := Run(RunConfig{Query: name, Events: 1000, Checkpoint: 100, Dir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "final stage") {
			t.Errorf("%s with checkpoints: %v, want an error naming the final stage", name, err)
		}
	}
}

// TestTimers: timers fire once, in (time, key) order, not when deleted,
// and survive Encode and DecodeTimers.
func TestTimers(t *testing.T) {
	var tm Timers
	tm.Timer(30, []byte("b"))
	tm.Timer(10, []byte("z"))
	tm.Timer(30, []byte("a"))
	tm.Timer(30, []byte("a"))
	tm.Timer(20, []byte("gone"))
	tm.DeleteTimer(20, []byte("gone"))
	tm.Timer(50, []byte("late"))
	back, rest, err := DecodeTimers(tm.Encode([]byte(nil)))
	if err != nil || len(rest) != 0 || back.Len() != 4 {
		t.Fatalf("decode: %d timers, %d bytes left, %v", back.Len(), len(rest), err)
	}
	for _, x := range []*Timers{&tm, back} {
		var got []string
		for _, k := range x.due(40) {
			got = append(got, fmt.Sprintf("%d %s", k.ts, k.key))
		}
		if want := []string{"10 z", "30 a", "30 b"}; !slices.Equal(got, want) {
			t.Errorf("due at 40: %v, want %v", got, want)
		}
		if d := x.due(40); len(d) != 0 || x.Len() != 1 {
			t.Errorf("fired again: %v; %d left", d, x.Len())
		}
	}
}

// FuzzDecodeTimers: no input panics or reads past its end, and what
// decodes encodes to bytes that decode to the same timers.
func FuzzDecodeTimers(f *testing.F) {
	var tm Timers
	tm.Timer(1, []byte("k"))
	tm.Timer(-5, nil)
	f.Add(tm.Encode(nil))
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, rest, err := DecodeTimers(b)
		if err != nil {
			return
		}
		if len(rest) > len(b) {
			t.Fatalf("%d bytes left of %d", len(rest), len(b))
		}
		enc := got.Encode(nil)
		again, _, err := DecodeTimers(enc)
		if err != nil || !bytes.Equal(again.Encode(nil), enc) {
			t.Fatalf("re-encoded timers do not decode the same: %v", err)
		}
	})
}
