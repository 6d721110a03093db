package nexmark

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// genStats is what TestGeneratorFollowsTheReference measures over a run of
// events.
type genStats struct {
	kinds                            map[Kind]int
	bids, hotAuction, hotBidder      int
	auctions, hotSeller              int
	auctionLead, bidderLead, sellerL int64 // the furthest a pick ran ahead of the newest
	hotAuctions                      map[int64]bool
	expiry                           []int64
	prices                           []int64
	sizes                            [3][]int
	urlOf                            map[string]string // channel → its URL
	extraLen                         [3][2]int         // min, max per kind
}

func measure(gen GenConfig, events int64) genStats {
	st := genStats{kinds: map[Kind]int{}, hotAuctions: map[int64]bool{}, urlOf: map[string]string{},
		auctionLead: math.MinInt64, bidderLead: math.MinInt64, sellerL: math.MinInt64}
	for i := range st.extraLen {
		st.extraLen[i] = [2]int{math.MaxInt, 0}
	}
	ext := func(k Kind, n int) {
		st.extraLen[k][0], st.extraLen[k][1] = min(st.extraLen[k][0], n), max(st.extraLen[k][1], n)
	}
	for id := range events {
		e := gen.Generate(id)
		st.kinds[e.Kind]++
		lastP, lastA := lastBase0PersonID(id), lastBase0AuctionID(id)
		switch e.Kind {
		case KindPerson:
			st.sizes[0] = append(st.sizes[0], personSize(e.Person)+len(e.Person.Extra))
			ext(KindPerson, len(e.Person.Extra))
		case KindAuction:
			a := e.Auction
			st.auctions++
			if a.Seller-firstPersonID == lastP/100*100 {
				st.hotSeller++
			}
			st.sellerL = max(st.sellerL, a.Seller-firstPersonID-lastP)
			st.expiry = append(st.expiry, a.Expires-a.DateTime)
			st.prices = append(st.prices, a.InitialBid)
			st.sizes[1] = append(st.sizes[1], auctionSize(a)+len(a.Extra))
			ext(KindAuction, len(a.Extra))
		case KindBid:
			b := e.Bid
			st.bids++
			if b.Auction-firstAuctionID == lastA/100*100 {
				st.hotAuction++
				st.hotAuctions[b.Auction] = true
			}
			st.auctionLead = max(st.auctionLead, b.Auction-firstAuctionID-lastA)
			if b.Bidder-2*firstPersonID == lastP/100*100+1 {
				st.hotBidder++
			}
			st.bidderLead = max(st.bidderLead, b.Bidder-2*firstPersonID-lastP)
			st.prices = append(st.prices, b.Price)
			st.sizes[2] = append(st.sizes[2], bidSize+len(b.Extra))
			ext(KindBid, len(b.Extra))
			if u, ok := st.urlOf[b.Channel]; ok && u != b.URL {
				st.urlOf[b.Channel] = "two URLs: " + u + " and " + b.URL
			} else if !ok {
				st.urlOf[b.Channel] = b.URL
			}
		}
	}
	return st
}

func mean(v []int) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(len(v))
}

// TestGeneratorFollowsTheReference pins the reference generator's rules
// (nexmark-flink's NexmarkGenerator and model/*Generator): each check
// fails under the rules this generator had before it followed them (hot
// batches of 2 and 4, picks 1 or 2 ahead, expiry horizon + 0–999 ms,
// prices in hundreds, one fresh URL per bid, fixed-length extras).
func TestGeneratorFollowsTheReference(t *testing.T) {
	const events = 200_000
	var gen GenConfig
	st := measure(gen, events)

	if st.kinds[KindPerson] != events/50 || st.kinds[KindAuction] != 3*events/50 || st.kinds[KindBid] != 46*events/50 {
		t.Errorf("mix %v, want 1 : 3 : 46", st.kinds)
	}
	// Hot picks: one in two bids on the hot auction, three in four bidders
	// and sellers hot (plus the random picks that land on them).
	for _, c := range []struct {
		what     string
		got, of  int
		min, max float64
	}{{"bids on the hot auction", st.hotAuction, st.bids, 0.49, 0.53},
		{"bids by the hot bidder", st.hotBidder, st.bids, 0.74, 0.77},
		{"auctions by the hot seller", st.hotSeller, st.auctions, 0.73, 0.78}} {
		if f := float64(c.got) / float64(c.of); f < c.min || f > c.max {
			t.Errorf("%s: %.3f, want %.2f–%.2f", c.what, f, c.min, c.max)
		}
	}
	// Hot batches of 100: the hot auction changes every 100 auctions
	// (1,666.7 events), not every 2.
	if n, want := len(st.hotAuctions), events/1667; n < want-1 || n > want+2 {
		t.Errorf("%d hot auctions over %d events, want about %d (one per 100 auctions)", n, events, want)
	}
	// Reach: picks run up to 10 ahead of the newest person or auction.
	for _, c := range []struct {
		what string
		lead int64
	}{{"bid auction", st.auctionLead}, {"bidder", st.bidderLead}, {"seller", st.sellerL}} {
		if c.lead != idLead {
			t.Errorf("%s picks ran at most %d ahead of the newest, want %d", c.what, c.lead, idLead)
		}
	}
	// Expiry: 1 + uniform below twice the time for 100 more auctions
	// (1,666 events: 166 or 167 ms at 10,000 events/s).
	lo, hi := slices.Min(st.expiry), slices.Max(st.expiry)
	if lo < 1 || hi > 334 || hi < 320 {
		t.Errorf("auctions run %d–%d ms, want 1 to at most 334, reaching near it", lo, hi)
	}
	var sum int64
	for _, x := range st.expiry {
		sum += x
	}
	if m := float64(sum) / float64(len(st.expiry)); m < 160 || m > 174 {
		t.Errorf("auctions run %.1f ms on average, want about 167", m)
	}
	// Prices: round(10^(6U) × 100), so most are not multiples of 100, and
	// the median is near 10^3 × 100.
	hundreds := 0
	for _, p := range st.prices {
		if p < 100 || p > 100_000_000 {
			t.Fatalf("price %d outside 100–100,000,000", p)
		}
		if p%100 == 0 {
			hundreds++
		}
	}
	if f := float64(hundreds) / float64(len(st.prices)); f > 0.1 {
		t.Errorf("%.2f of prices are multiples of 100", f)
	}
	slices.Sort(st.prices)
	if med := st.prices[len(st.prices)/2]; med < 70_000 || med > 140_000 {
		t.Errorf("median price %d, want about 100,000 (log-uniform)", med)
	}
	// Sizes as the reference counts them average 200, 500 and 100 bytes,
	// the extra field within ±20% of what is left.
	for i, want := range []float64{avgPersonBytes, avgAuctionBytes, avgBidBytes} {
		if m := mean(st.sizes[i]); math.Abs(m-want) > want*0.02 {
			t.Errorf("kind %d: mean size %.1f, want about %.0f", i, m, want)
		}
	}
	if r := st.extraLen[KindBid]; r[0] != 54 || r[1] != 81 {
		t.Errorf("a bid's extra is %d–%d bytes, want 54–81 (68 ± 20%%)", r[0], r[1])
	}
	// URLs: each channel has one URL; the four hot ones have no
	// channel_id, nine in ten of the others carry abs(Integer.reverse(i)).
	dir := `[a-z_]{3,4}`
	shape := regexp.MustCompile(`^https://www\.nexmark\.com/` + dir + `/` + dir + `/` + dir + `/item\.htm\?query=1(&channel_id=(-?\d+))?$`)
	withID, channels := 0, 0
	for ch, u := range st.urlOf {
		m := shape.FindStringSubmatch(u)
		if m == nil {
			t.Fatalf("channel %s: URL %q", ch, u)
		}
		n, isNumbered := strings.CutPrefix(ch, "channel-")
		if !isNumbered {
			if m[1] != "" {
				t.Errorf("hot channel %s has a channel_id: %s", ch, u)
			}
			continue
		}
		channels++
		if m[1] != "" {
			withID++
			i, _ := strconv.Atoi(n)
			if m[2] != strconv.Itoa(int(channelIDOf(i))) {
				t.Errorf("channel %d: channel_id=%s, want %d", i, m[2], channelIDOf(i))
			}
		}
	}
	if channels < 9000 {
		t.Errorf("only %d of the 10,000 channels met", channels)
	}
	if f := float64(withID) / float64(channels); f < 0.87 || f > 0.93 {
		t.Errorf("%.3f of channels carry a channel_id, want about 0.9", f)
	}
	if channelIDOf(1) != math.MinInt32 || channelIDOf(2) != 1<<30 || channelIDOf(0) != 0 {
		t.Errorf("channel ids 0, 1, 2: %d %d %d, want Java's abs(Integer.reverse(i))", channelIDOf(0), channelIDOf(1), channelIDOf(2))
	}
}

// TestGeneratorStrings: names and descriptions of varying length with
// spaces, emails and credit cards as the reference makes them.
func TestGeneratorStrings(t *testing.T) {
	var gen GenConfig
	// nextString(7) + "@" + nextString(5) + ".com": up to 6 and 4
	// characters, letters or spaces, trimmed.
	email := regexp.MustCompile(`^([a-z]([a-z ]{0,4}[a-z])?)?@([a-z]([a-z ]{0,2}[a-z])?)?\.com$`)
	card := regexp.MustCompile(`^\d{4} \d{4} \d{4} \d{4}$`)
	spaced, lengths := 0, map[int]bool{}
	for id := range int64(20_000) {
		e := gen.Generate(id)
		switch e.Kind {
		case KindPerson:
			p := e.Person
			if !card.MatchString(p.CreditCard) || !email.MatchString(p.Email) {
				t.Fatalf("person %d: card %q, email %q", p.ID, p.CreditCard, p.Email)
			}
		case KindAuction:
			a := e.Auction
			for _, s := range []string{a.ItemName, a.Description} {
				if s != strings.TrimSpace(s) {
					t.Fatalf("auction %d: %q not trimmed", a.ID, s)
				}
			}
			if len(a.ItemName) > 19 || len(a.Description) > 99 {
				t.Fatalf("auction %d: name of %d, description of %d bytes", a.ID, len(a.ItemName), len(a.Description))
			}
			if strings.Contains(a.Description, " ") {
				spaced++
			}
			lengths[len(a.ItemName)] = true
		}
	}
	if spaced < 500 || len(lengths) < 15 {
		t.Errorf("%d descriptions with spaces, %d item name lengths: want varied strings with spaces", spaced, len(lengths))
	}
}

// TestGeneratorTimes: event times as the reference's timestampForEvent,
// also at a rate that does not divide a second; the same event every time
// it is made; the seed changes the stream.
func TestGeneratorTimes(t *testing.T) {
	gen := GenConfig{Rate: 3}
	start := (GenConfig{}).withDefaults().Start
	for _, c := range []struct{ id, want int64 }{{0, 0}, {1, 333}, {2, 666}, {3, 1000}, {4, 1333}} {
		if got := gen.Generate(c.id).Time() - start; got != c.want {
			t.Errorf("rate 3, event %d at +%d ms, want +%d", c.id, got, c.want)
		}
	}
	var def GenConfig
	for id := range int64(500) {
		a, b := def.Generate(id), def.Generate(id)
		if a.Time() != b.Time() || a.Kind != b.Kind || a.Kind == KindBid && *a.Bid != *b.Bid {
			t.Fatalf("event %d differs when made again", id)
		}
	}
	if a, b := (GenConfig{Seed: 1}).Generate(77), (GenConfig{Seed: 2}).Generate(77); *a.Bid == *b.Bid {
		t.Error("the seed changes nothing")
	}
}
