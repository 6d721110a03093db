package events

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// Value sets of the dictionary and categorical columns, with the weights
// the generator draws them by. Their order is fixed: it is part of what
// makes a seed reproduce the same data.
var (
	// countryCodes: 50 ISO 3166 codes, drawn with weight 1/(rank+1)^1.1.
	countryCodes = []string{
		"US", "IN", "BR", "GB", "DE", "FR", "JP", "ID", "MX", "CA",
		"IT", "ES", "KR", "TR", "RU", "AU", "NL", "PL", "PH", "VN",
		"AR", "CO", "TH", "EG", "NG", "PK", "BD", "SA", "ZA", "MY",
		"SE", "BE", "CH", "AT", "CL", "PE", "UA", "RO", "CZ", "PT",
		"IL", "AE", "DK", "FI", "NO", "IE", "NZ", "SG", "GR", "HU",
	}
	eventTypes       = []string{"view", "click", "search", "add_to_cart", "purchase", "login", "logout"}
	eventTypeWeights = []float64{56, 22, 8, 6, 3.5, 3, 1.5}
	// eventLatencyMu is the mean of ln(latency_ms) per event type.
	eventLatencyMu = []float64{3.4, 2.9, 4.4, 3.9, 5.2, 4.7, 2.8}
	// eventBytesMu is the mean of ln(bytes) per event type.
	eventBytesMu = []float64{10.2, 7.5, 9.1, 7.8, 8.4, 7.2, 6.5}

	statusCodes   = []int32{200, 201, 204, 301, 304, 400, 401, 403, 404, 429, 500, 502, 503, 504}
	statusWeights = []float64{88, 2, 1, 0.5, 3, 1, 0.7, 0.5, 1.5, 0.3, 0.8, 0.3, 0.3, 0.1}

	userAgents = []string{
		"Chrome/126 Windows", "Chrome/126 Mac", "Safari/17 Mac", "Firefox/128 Linux",
		"Safari/17 iPhone Mobile", "Chrome/126 Android Mobile", "Edge/126 Windows",
		"SamsungBrowser/25 Mobile", "okhttp/4.12", "curl/8.8", "Googlebot/2.1",
		"Firefox/128 Windows", "Chrome/125 Windows", "Safari/16 iPad", "App/5.3 iOS Mobile",
		"App/5.3 Android Mobile",
	}
	userAgentWeights = []float64{24, 9, 7, 3, 18, 20, 5, 3, 2, 1, 1, 2, 2, 1, 1, 1}
)

// The categorical tables: a uniform 16-bit number indexes a table of 65536
// entries holding value indexes in proportion to their weights.
var (
	countryTable   = weightTable(zipfWeights(len(countryCodes), 1.1))
	eventTypeTable = weightTable(eventTypeWeights)
	statusTable    = weightTable(statusWeights)
	userAgentTable = weightTable(userAgentWeights)
	// purchaseType is the index of "purchase" in eventTypes.
	purchaseType = indexOf(eventTypes, "purchase")
)

func zipfWeights(n int, s float64) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1 / math.Pow(float64(i+1), s)
	}
	return w
}

func weightTable(weights []float64) *[1 << 16]uint8 {
	var total float64
	for _, w := range weights {
		total += w
	}
	var t [1 << 16]uint8
	acc, next := 0.0, 0
	for i, w := range weights {
		acc += w
		end := int(math.Round(acc / total * (1 << 16)))
		if i == len(weights)-1 {
			end = 1 << 16
		}
		for ; next < end; next++ {
			t[next] = uint8(i)
		}
	}
	return &t
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	panic("events: " + v + " missing from its value set") // a programming error in the tables above
}

// mulDiv returns a*b/c for a*b/c < 2^63 without overflowing in between.
func mulDiv(a, b, c uint64) int64 {
	hi, lo := bits.Mul64(a, b)
	q, _ := bits.Div64(hi, lo, c)
	return int64(q)
}

// chunkRows is the unit of randomness: the values of row i are drawn from a
// generator seeded with (Seed, i/chunkRows), so the data depend only on
// Seed, Rows, Customers, Start and Span — not on how the rows are cut into
// files and batches, nor on which goroutine generates them.
const chunkRows = 4096

// customerPrime is a prime larger than any supported customer count;
// multiplying the Zipf rank by customerMultiplier modulo it scatters the
// heavy customers over the id space instead of giving them ids 1, 2, 3.
const (
	customerPrime      = 1_000_003
	customerMultiplier = 48_271
	customerBase       = 1_000_000
	maxCustomers       = customerPrime - 1
	sessionWindowUS    = 30 * 60 * 1_000_000 // a session is a customer's 30-minute window
	sessionsPerID      = 1_000_000
)

// rowGen draws the rows of a data set. Not safe for concurrent use: each
// generating goroutine has its own.
type rowGen struct {
	seed      uint64
	rows      uint64 // of the whole data set
	start     int64  // µs
	spanUS    uint64
	customers uint64
	pcg       *rand.PCG
	rng       *rand.Rand
	zipf      *rand.Zipf
	next      uint64 // the row pcg is positioned to draw; ^0 before the first
}

func newRowGen(o GenOptions) *rowGen {
	g := &rowGen{seed: uint64(o.Seed), rows: uint64(o.Rows), start: o.Start.UnixMicro(),
		spanUS: uint64(o.Span.Microseconds()), customers: uint64(o.Customers), next: ^uint64(0)}
	g.pcg = rand.NewPCG(0, 0)
	g.rng = rand.New(g.pcg)
	if g.customers > 1 {
		g.zipf = rand.NewZipf(g.rng, 1.1, 1, g.customers-1)
	}
	return g
}

// base returns the lowest timestamp row i may have: row i lies in
// [base(i), base(i+1)), so timestamps never decrease with the row index and
// file f covers [base(first row), base(first row of f+1)).
func (g *rowGen) base(i uint64) int64 {
	return g.start + mulDiv(i, g.spanUS, g.rows)
}

// row is one generated event.
type row struct {
	ts, customer, session, bytes int64
	latency, price               float64
	hasPrice                     bool
	status                       int32
	country                      int16
	eventType                    int8
	userAgent                    uint8
}

// seek positions the generator to draw row i next. The number of draws a
// row takes varies (Zipf and normal samples reject), so the rows of i's
// chunk before it are drawn and dropped.
func (g *rowGen) seek(i uint64) {
	if i == g.next {
		return
	}
	c := i / chunkRows
	g.next = c * chunkRows
	for g.next < i {
		g.draw()
	}
}

// draw draws row g.next and advances.
func (g *rowGen) draw() row {
	i := g.next
	g.next++
	if i%chunkRows == 0 {
		g.pcg.Seed(g.seed, (i/chunkRows)^0x9e3779b97f4a7c15)
	}
	lo, hi := g.base(i), g.base(i+1)
	ts := lo
	if step := uint64(hi - lo); step > 1 {
		ts += int64(g.rng.Uint64N(step))
	}
	u := g.rng.Uint64()
	r := row{ts: ts, eventType: int8(eventTypeTable[uint16(u)]), country: int16(countryTable[uint16(u>>16)]),
		status: statusCodes[statusTable[uint16(u>>32)]], userAgent: userAgentTable[uint16(u>>48)]}
	var rank uint64
	if g.zipf != nil {
		rank = g.zipf.Uint64()
	}
	r.customer = int64(customerBase + (rank*customerMultiplier)%customerPrime)
	r.session = r.customer*sessionsPerID + (ts/sessionWindowUS)%sessionsPerID
	r.latency = math.Round(math.Exp(eventLatencyMu[r.eventType]+0.8*g.rng.NormFloat64())*1000) / 1000
	if r.status >= 400 {
		r.bytes = 200 + int64(g.rng.Uint64N(1800))
	} else {
		r.bytes = int64(math.Exp(eventBytesMu[r.eventType] + 0.7*g.rng.NormFloat64()))
	}
	if int(r.eventType) == purchaseType {
		r.hasPrice = true
		r.price = math.Round(math.Exp(3.2+0.9*g.rng.NormFloat64())*100) / 100
	}
	return r
}

// fill draws rows [first, first+n) into b.
func (g *rowGen) fill(b *batchBuilder, first uint64, n int) {
	b.reset(n)
	g.seek(first)
	for k := 0; k < n; k++ {
		b.append(g.draw())
	}
}
