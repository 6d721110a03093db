package nexmark

// Independent batch evaluation of the Nexmark reference SQL queries
// (nexmark-flink/src/main/resources/queries/qN.sql), used as a test oracle.
//
// Every query is computed over the whole event slice at once, the way the SQL
// reads (filter, group, join, sort), without timers or watermarks. The slice is
// in arrival order, which is also event-time order.
//
// A row is the SELECT-list columns in SELECT order joined by ",":
//   BIGINT and TIMESTAMP(3) (unix ms) as decimal integers, DECIMAL(23,3) with
//   exactly three fractional digits, VARCHAR as is, NULL as "".
//
// Append-only queries produce the multiset of rows of the batch result.
// Updating queries (q4, q9, q15, q16, q17, q18, q19) produce one row per update
// of a result row, in arrival order, as described next to each query.

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// evalSQL emits every output row of query over evs into out. It returns false
// for an unknown query name.
func evalSQL(query string, evs []Event, out *Sink) bool {
	rows, ok := sqlEvalRowsOK(query, evs)
	if !ok {
		return false
	}
	for _, r := range rows {
		out.Emit(r)
	}
	return true
}

// evalRows returns the rows of query over evs (nil for an unknown query).
func evalRows(query string, evs []Event) []string {
	rows, _ := sqlEvalRowsOK(query, evs)
	return rows
}

func sqlEvalRowsOK(query string, evs []Event) ([]string, bool) {
	f, ok := sqlQueries[query]
	if !ok {
		return nil, false
	}
	return f(evs), true
}

var sqlQueries = map[string]func([]Event) []string{
	"q0": sqlQ0, "q1": sqlQ1, "q2": sqlQ2, "q3": sqlQ3, "q4": sqlQ4, "q5": sqlQ5,
	"q7": sqlQ7, "q8": sqlQ8, "q9": sqlQ9, "q10": sqlQ10, "q11": sqlQ11, "q12": sqlQ12,
	"q13": sqlQ13, "q14": sqlQ14, "q15": sqlQ15, "q16": sqlQ16, "q17": sqlQ17, "q18": sqlQ18,
	"q19": sqlQ19, "q20": sqlQ20, "q21": sqlQ21, "q22": sqlQ22,
}

// ---------------------------------------------------------------------------
// Formatting helpers

func sqlRow(cols ...string) string { return strings.Join(cols, ",") }

func sqlItoa(v int64) string { return strconv.FormatInt(v, 10) }

// sqlDec908 formats the DECIMAL(23,3) value 0.908 * price exactly.
// Assumes |price| < 1e16 so that price*908 fits in an int64.
func sqlDec908(price int64) string {
	return sqlThousandths(price * 908)
}

// sqlThousandths formats v/1000 with exactly three fractional digits.
func sqlThousandths(v int64) string {
	sign := ""
	u := uint64(v)
	if v < 0 {
		sign = "-"
		u = uint64(-v)
	}
	frac := strconv.FormatUint(u%1000, 10)
	return sign + strconv.FormatUint(u/1000, 10) + "." + strings.Repeat("0", 3-len(frac)) + frac
}

func sqlUtc(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// DATE_FORMAT(ts, 'yyyy-MM-dd')
func sqlFmtDay(ms int64) string { return sqlUtc(ms).Format("2006-01-02") }

// DATE_FORMAT(ts, 'HH:mm')
func sqlFmtHM(ms int64) string { return sqlUtc(ms).Format("15:04") }

// sqlFloorDiv is integer division rounding toward negative infinity.
func sqlFloorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

const sqlTenSeconds = 10_000

// sqlTumbleStart is the start of the epoch-aligned window of size size containing t.
func sqlTumbleStart(t, size int64) int64 { return sqlFloorDiv(t, size) * size }

// ---------------------------------------------------------------------------
// Event selection

func sqlBids(evs []Event) []*Bid {
	var out []*Bid
	for i := range evs {
		if evs[i].Kind == KindBid {
			out = append(out, evs[i].Bid)
		}
	}
	return out
}

func sqlAuctions(evs []Event) []*Auction {
	var out []*Auction
	for i := range evs {
		if evs[i].Kind == KindAuction {
			out = append(out, evs[i].Auction)
		}
	}
	return out
}

func sqlPersons(evs []Event) []*Person {
	var out []*Person
	for i := range evs {
		if evs[i].Kind == KindPerson {
			out = append(out, evs[i].Person)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Stateless per-bid queries

// sqlQ0 (q0): SELECT auction, bidder, price, dateTime, extra FROM bid
func sqlQ0(evs []Event) []string {
	var out []string
	for _, b := range sqlBids(evs) {
		out = append(out, sqlRow(sqlItoa(b.Auction), sqlItoa(b.Bidder), sqlItoa(b.Price), sqlItoa(b.DateTime), b.Extra))
	}
	return out
}

// sqlQ1 (q1): SELECT auction, bidder, 0.908 * price, dateTime, extra FROM bid
func sqlQ1(evs []Event) []string {
	var out []string
	for _, b := range sqlBids(evs) {
		out = append(out, sqlRow(sqlItoa(b.Auction), sqlItoa(b.Bidder), sqlDec908(b.Price), sqlItoa(b.DateTime), b.Extra))
	}
	return out
}

// sqlQ2 (q2): SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0
// (Java/SQL MOD keeps the sign of the dividend, like Go's %.)
func sqlQ2(evs []Event) []string {
	var out []string
	for _, b := range sqlBids(evs) {
		if b.Auction%123 == 0 {
			out = append(out, sqlRow(sqlItoa(b.Auction), sqlItoa(b.Price)))
		}
	}
	return out
}

// sqlQ10 (q10): SELECT auction, bidder, price, dateTime, extra,
//
//	DATE_FORMAT(dateTime, 'yyyy-MM-dd'), DATE_FORMAT(dateTime, 'HH:mm') FROM bid
func sqlQ10(evs []Event) []string {
	var out []string
	for _, b := range sqlBids(evs) {
		out = append(out, sqlRow(sqlItoa(b.Auction), sqlItoa(b.Bidder), sqlItoa(b.Price), sqlItoa(b.DateTime), b.Extra,
			sqlFmtDay(b.DateTime), sqlFmtHM(b.DateTime)))
	}
	return out
}

// sqlQ13 (q13): bid JOIN side_input ON mod(auction, 10000) = key; SELECT auction,
// bidder, price, dateTime, value. side_input holds (k, "k") for k in
// 0..9999 (SideInputGenerator writes "i,i"); the table never changes, so the
// processing-time lookup is just a lookup. A negative auction id gives a
// negative MOD and no match (inner join drops the bid).
func sqlQ13(evs []Event) []string {
	const sideInputRows = 10000
	var out []string
	for _, b := range sqlBids(evs) {
		k := b.Auction % sideInputRows
		if k < 0 {
			continue
		}
		out = append(out, sqlRow(sqlItoa(b.Auction), sqlItoa(b.Bidder), sqlItoa(b.Price), sqlItoa(b.DateTime), sqlItoa(k)))
	}
	return out
}

// sqlQ14 (q14): SELECT auction, bidder, 0.908 * price, bidTimeType, dateTime, extra,
// count_char(extra, 'c') FROM bid WHERE 0.908*price > 1000000 AND
// 0.908*price < 50000000. Comparisons are exact: price*908 vs bound*1000.
func sqlQ14(evs []Event) []string {
	var out []string
	for _, b := range sqlBids(evs) {
		v := b.Price * 908
		if !(v > 1_000_000*1000 && v < 50_000_000*1000) {
			continue
		}
		h := sqlUtc(b.DateTime).Hour()
		var typ string
		switch {
		case h >= 8 && h <= 18:
			typ = "dayTime"
		case h <= 6 || h >= 20:
			typ = "nightTime"
		default:
			typ = "otherTime"
		}
		// CountChar counts the bytes equal to the first byte of 'c'.
		cc := int64(strings.Count(b.Extra, "c"))
		out = append(out, sqlRow(sqlItoa(b.Auction), sqlItoa(b.Bidder), sqlThousandths(v), typ, sqlItoa(b.DateTime), b.Extra, sqlItoa(cc)))
	}
	return out
}

// sqlQ21 (q21): SELECT auction, bidder, price, channel, CASE lower(channel) ... ELSE
// REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) END FROM bid WHERE
// REGEXP_EXTRACT(...) IS NOT NULL OR lower(channel) IN (...).
func sqlQ21(evs []Event) []string {
	var out []string
	for _, b := range sqlBids(evs) {
		extracted, found := sqlRegexpExtractChannelID(b.URL)
		var id string
		switch strings.ToLower(b.Channel) {
		case "apple":
			id = "0"
		case "google":
			id = "1"
		case "facebook":
			id = "2"
		case "baidu":
			id = "3"
		default:
			if !found {
				continue // neither condition of the WHERE holds
			}
			id = extracted
		}
		out = append(out, sqlRow(sqlItoa(b.Auction), sqlItoa(b.Bidder), sqlItoa(b.Price), b.Channel, id))
	}
	return out
}

var sqlChannelIDRe = regexp.MustCompile(`(&|^)channel_id=([^&]*)`)

// sqlRegexpExtractChannelID is REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2):
// group 2 of the first (leftmost) match; found=false means SQL NULL.
func sqlRegexpExtractChannelID(url string) (string, bool) {
	m := sqlChannelIDRe.FindStringSubmatch(url)
	if m == nil {
		return "", false
	}
	return m[2], true
}

// sqlQ22 (q22): SELECT auction, bidder, price, channel, SPLIT_INDEX(url, '/', 3),
// SPLIT_INDEX(url, '/', 4), SPLIT_INDEX(url, '/', 5) FROM bid
func sqlQ22(evs []Event) []string {
	var out []string
	for _, b := range sqlBids(evs) {
		parts := strings.Split(b.URL, "/")
		idx := func(i int) string {
			if i < len(parts) {
				return parts[i]
			}
			return "" // NULL
		}
		out = append(out, sqlRow(sqlItoa(b.Auction), sqlItoa(b.Bidder), sqlItoa(b.Price), b.Channel, idx(3), idx(4), idx(5)))
	}
	return out
}

// ---------------------------------------------------------------------------
// Regular (non-windowed) joins, append-only

// sqlQ3 (q3): auction A JOIN person P ON A.seller = P.id WHERE A.category = 10 AND
// P.state IN ('OR','ID','CA'); SELECT P.name, P.city, P.state, A.id.
// One row per matching pair, whatever the arrival order.
func sqlQ3(evs []Event) []string {
	byID := map[int64][]*Person{}
	for _, p := range sqlPersons(evs) {
		if p.State == "OR" || p.State == "ID" || p.State == "CA" {
			byID[p.ID] = append(byID[p.ID], p)
		}
	}
	var out []string
	for _, a := range sqlAuctions(evs) {
		if a.Category != 10 {
			continue
		}
		for _, p := range byID[a.Seller] {
			out = append(out, sqlRow(p.Name, p.City, p.State, sqlItoa(a.ID)))
		}
	}
	return out
}

// sqlQ20 (q20): bid B JOIN auction A ON B.auction = A.id WHERE A.category = 10.
// One row per matching pair, whatever the arrival order.
func sqlQ20(evs []Event) []string {
	byID := map[int64][]*Auction{}
	for _, a := range sqlAuctions(evs) {
		if a.Category == 10 {
			byID[a.ID] = append(byID[a.ID], a)
		}
	}
	var out []string
	for _, b := range sqlBids(evs) {
		for _, a := range byID[b.Auction] {
			out = append(out, sqlRow(
				sqlItoa(b.Auction), sqlItoa(b.Bidder), sqlItoa(b.Price), b.Channel, b.URL, sqlItoa(b.DateTime), b.Extra,
				a.ItemName, a.Description, sqlItoa(a.InitialBid), sqlItoa(a.Reserve), sqlItoa(a.DateTime),
				sqlItoa(a.Expires), sqlItoa(a.Seller), sqlItoa(a.Category), a.Extra))
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Windowed aggregations, append-only

// sqlQ5 (q5): HOP(size 10 s, slide 2 s). Per window, count bids per auction; emit
// (auction, num) for every auction whose count is the window's maximum.
func sqlQ5(evs []Event) []string {
	const size, slide = sqlTenSeconds, 2_000
	counts := map[int64]map[int64]int64{} // window start -> auction -> count
	for _, b := range sqlBids(evs) {
		// Windows [s, s+size) with s a multiple of slide and s <= t < s+size.
		for s := sqlTumbleStart(b.DateTime, slide); s > b.DateTime-size; s -= slide {
			if counts[s] == nil {
				counts[s] = map[int64]int64{}
			}
			counts[s][b.Auction]++
		}
	}
	var out []string
	for _, perAuction := range counts {
		var maxn int64
		for _, n := range perAuction {
			maxn = max(maxn, n)
		}
		for auction, n := range perAuction {
			if n >= maxn {
				out = append(out, sqlRow(sqlItoa(auction), sqlItoa(n)))
			}
		}
	}
	return out
}

// sqlQ7 (q7): per TUMBLE(10 s) window, maxprice and window_end; join bids with
// B.price = maxprice AND B.dateTime BETWEEN window_end - 10 s AND window_end
// (both ends inclusive). A bid can thus match the window it belongs to and,
// if it sits exactly on a window boundary, the previous window too.
// SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra.
func sqlQ7(evs []Event) []string {
	bs := sqlBids(evs)
	maxPrice := map[int64]int64{} // window start -> max price
	for _, b := range bs {
		s := sqlTumbleStart(b.DateTime, sqlTenSeconds)
		if m, ok := maxPrice[s]; !ok || b.Price > m {
			maxPrice[s] = b.Price
		}
	}
	var out []string
	for _, b := range bs {
		r := sqlRow(sqlItoa(b.Auction), sqlItoa(b.Price), sqlItoa(b.Bidder), sqlItoa(b.DateTime), b.Extra)
		// Candidate windows: end-10s <= t <= end, i.e. start <= t <= start+10s.
		s := sqlTumbleStart(b.DateTime, sqlTenSeconds)
		starts := []int64{s}
		if b.DateTime == s {
			starts = append(starts, s-sqlTenSeconds) // t is exactly that window's end
		}
		for _, ws := range starts {
			if m, ok := maxPrice[ws]; ok && m == b.Price {
				out = append(out, r)
			}
		}
	}
	return out
}

// sqlQ8 (q8): persons and auction sellers, each grouped per TUMBLE(10 s) window,
// joined on id = seller and the same window. SELECT P.id, P.name, P.starttime.
func sqlQ8(evs []Event) []string {
	type sellerWin struct{ seller, start int64 }
	sellers := map[sellerWin]bool{}
	for _, a := range sqlAuctions(evs) {
		sellers[sellerWin{a.Seller, sqlTumbleStart(a.DateTime, sqlTenSeconds)}] = true
	}
	type personWin struct {
		id    int64
		name  string
		start int64
	}
	seen := map[personWin]bool{}
	var out []string
	for _, p := range sqlPersons(evs) {
		k := personWin{p.ID, p.Name, sqlTumbleStart(p.DateTime, sqlTenSeconds)}
		if seen[k] { // GROUP BY id, name, window
			continue
		}
		seen[k] = true
		if sellers[sellerWin{k.id, k.start}] {
			out = append(out, sqlRow(sqlItoa(k.id), k.name, sqlItoa(k.start)))
		}
	}
	return out
}

// sqlQ11 (q11): per bidder, SESSION windows with a 10 s gap (Flink merging: windows
// [t, t+10s) that overlap or touch merge, so a bid exactly 10 s after the
// previous one continues the session). SELECT bidder, count(*),
// SESSION_START (first bid time), SESSION_END (last bid time + 10 s).
func sqlQ11(evs []Event) []string {
	const gap = sqlTenSeconds
	perBidder := map[int64][]int64{}
	var order []int64
	for _, b := range sqlBids(evs) {
		if _, ok := perBidder[b.Bidder]; !ok {
			order = append(order, b.Bidder)
		}
		perBidder[b.Bidder] = append(perBidder[b.Bidder], b.DateTime)
	}
	var out []string
	for _, bidder := range order {
		ts := perBidder[bidder]
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		start, last, n := ts[0], ts[0], int64(1)
		flush := func() {
			out = append(out, sqlRow(sqlItoa(bidder), sqlItoa(n), sqlItoa(start), sqlItoa(last+gap)))
		}
		for _, t := range ts[1:] {
			if t <= last+gap { // [t, t+gap) touches or overlaps [start, last+gap)
				last, n = t, n+1
				continue
			}
			flush()
			start, last, n = t, t, 1
		}
		flush()
	}
	return out
}

// sqlQ12 (q12): per bidder, count per TUMBLE(10 s) window on PROCTIME(). Choice: the
// processing time of a bid is taken to be its DateTime, so this is an
// epoch-aligned tumbling window over DateTime.
// SELECT bidder, count(*), window_start, window_end.
func sqlQ12(evs []Event) []string {
	type key struct{ bidder, start int64 }
	counts := map[key]int64{}
	var order []key
	for _, b := range sqlBids(evs) {
		k := key{b.Bidder, sqlTumbleStart(b.DateTime, sqlTenSeconds)}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	var out []string
	for _, k := range order {
		out = append(out, sqlRow(sqlItoa(k.bidder), sqlItoa(counts[k]), sqlItoa(k.start), sqlItoa(k.start+sqlTenSeconds)))
	}
	return out
}

// ---------------------------------------------------------------------------
// Updating queries: one row per update, in arrival order

// sqlRankCounts is the count(*) / count(distinct) FILTER block shared by q15 and
// q16: total, rank1 (price < 10000), rank2 (10000 <= price < 1000000),
// rank3 (price >= 1000000).
type sqlRankCounts struct {
	bids     [4]int64
	bidders  [4]map[int64]bool
	auctions [4]map[int64]bool
}

func sqlNewRankCounts() *sqlRankCounts {
	r := &sqlRankCounts{}
	for i := range 4 {
		r.bidders[i] = map[int64]bool{}
		r.auctions[i] = map[int64]bool{}
	}
	return r
}

func sqlPriceRank(price int64) int {
	switch {
	case price < 10_000:
		return 1
	case price < 1_000_000:
		return 2
	default:
		return 3
	}
}

func (r *sqlRankCounts) add(b *Bid) {
	for _, i := range []int{0, sqlPriceRank(b.Price)} {
		r.bids[i]++
		r.bidders[i][b.Bidder] = true
		r.auctions[i][b.Auction] = true
	}
}

// cols: total_bids, rank1..3_bids, total_bidders, rank1..3_bidders,
// total_auctions, rank1..3_auctions.
func (r *sqlRankCounts) cols() []string {
	var c []string
	for i := range 4 {
		c = append(c, sqlItoa(r.bids[i]))
	}
	for i := range 4 {
		c = append(c, sqlItoa(int64(len(r.bidders[i]))))
	}
	for i := range 4 {
		c = append(c, sqlItoa(int64(len(r.auctions[i]))))
	}
	return c
}

// sqlQ15 (q15): GROUP BY day; after each bid, the row of its group.
func sqlQ15(evs []Event) []string {
	groups := map[string]*sqlRankCounts{}
	var out []string
	for _, b := range sqlBids(evs) {
		day := sqlFmtDay(b.DateTime)
		g := groups[day]
		if g == nil {
			g = sqlNewRankCounts()
			groups[day] = g
		}
		g.add(b)
		out = append(out, sqlRow(append([]string{day}, g.cols()...)...))
	}
	return out
}

// sqlQ16 (q16): GROUP BY channel, day; after each bid, the row of its group.
// minute = max(DATE_FORMAT(dateTime, 'HH:mm')) over the group (string max).
func sqlQ16(evs []Event) []string {
	type key struct{ channel, day string }
	type group struct {
		minute string
		counts *sqlRankCounts
	}
	groups := map[key]*group{}
	var out []string
	for _, b := range sqlBids(evs) {
		k := key{b.Channel, sqlFmtDay(b.DateTime)}
		g := groups[k]
		if g == nil {
			g = &group{counts: sqlNewRankCounts()}
			groups[k] = g
		}
		g.minute = max(g.minute, sqlFmtHM(b.DateTime))
		g.counts.add(b)
		out = append(out, sqlRow(append([]string{k.channel, k.day, g.minute}, g.counts.cols()...)...))
	}
	return out
}

// sqlQ17 (q17): GROUP BY auction, day; after each bid, the row of its group.
// avg_price = sum / count truncated (AVG over BIGINT is BIGINT).
func sqlQ17(evs []Event) []string {
	type key struct {
		auction int64
		day     string
	}
	type group struct{ total, r1, r2, r3, min, max, sum int64 }
	groups := map[key]*group{}
	var out []string
	for _, b := range sqlBids(evs) {
		k := key{b.Auction, sqlFmtDay(b.DateTime)}
		g := groups[k]
		if g == nil {
			g = &group{min: b.Price, max: b.Price}
			groups[k] = g
		}
		g.total++
		switch sqlPriceRank(b.Price) {
		case 1:
			g.r1++
		case 2:
			g.r2++
		case 3:
			g.r3++
		}
		g.min, g.max = min(g.min, b.Price), max(g.max, b.Price)
		g.sum += b.Price
		out = append(out, sqlRow(sqlItoa(k.auction), k.day, sqlItoa(g.total), sqlItoa(g.r1), sqlItoa(g.r2), sqlItoa(g.r3),
			sqlItoa(g.min), sqlItoa(g.max), sqlItoa(g.sum/g.total), sqlItoa(g.sum)))
	}
	return out
}

func sqlBidRow(b *Bid) []string {
	return []string{sqlItoa(b.Auction), sqlItoa(b.Bidder), sqlItoa(b.Price), b.Channel, b.URL, sqlItoa(b.DateTime), b.Extra}
}

// sqlQ18 (q18): ROW_NUMBER per (bidder, auction) ORDER BY dateTime DESC, keep rank 1.
// A bid whose dateTime >= the kept one's replaces it (ties: later arrival
// wins) and is emitted; an older bid emits nothing.
func sqlQ18(evs []Event) []string {
	type key struct{ bidder, auction int64 }
	latest := map[key]int64{}
	var out []string
	for _, b := range sqlBids(evs) {
		k := key{b.Bidder, b.Auction}
		if t, ok := latest[k]; ok && b.DateTime < t {
			continue
		}
		latest[k] = b.DateTime
		out = append(out, sqlRow(sqlBidRow(b)...))
	}
	return out
}

// sqlQ19 (q19): ROW_NUMBER per auction ORDER BY price DESC (ties: earlier arrival
// ranks higher), keep rank <= 10. Each arriving bid is emitted with its rank
// at arrival = 1 + #(earlier bids on the auction with price >= its price),
// if that rank is <= 10. SELECT * = bid columns, then rank_number.
func sqlQ19(evs []Event) []string {
	prices := map[int64][]int64{} // auction -> earlier prices, ascending
	var out []string
	for _, b := range sqlBids(evs) {
		ps := prices[b.Auction]
		i := sort.Search(len(ps), func(i int) bool { return ps[i] >= b.Price })
		rank := int64(len(ps)-i) + 1
		ps = append(ps, 0)
		copy(ps[i+1:], ps[i:])
		ps[i] = b.Price
		prices[b.Auction] = ps
		if rank <= 10 {
			out = append(out, sqlRow(append(sqlBidRow(b), sqlItoa(rank))...))
		}
	}
	return out
}

// sqlJoinAuctionBids enumerates the pairs of the q4/q9 join
//
//	auction A, bid B WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
//
// in update order: events in arrival order; a bid whose auction has arrived
// is joined at once; a bid whose auction has not arrived yet waits, and when
// the auction arrives the waiting bids are joined in their arrival order.
// Auction ids are assumed unique (a repeated id replaces the earlier auction
// for bids arriving afterwards).
func sqlJoinAuctionBids(evs []Event, f func(a *Auction, b *Bid)) {
	arrived := map[int64]*Auction{}
	waiting := map[int64][]*Bid{}
	join := func(a *Auction, b *Bid) {
		if a.DateTime <= b.DateTime && b.DateTime <= a.Expires {
			f(a, b)
		}
	}
	for i := range evs {
		switch evs[i].Kind {
		case KindAuction:
			a := evs[i].Auction
			arrived[a.ID] = a
			for _, b := range waiting[a.ID] {
				join(a, b)
			}
			delete(waiting, a.ID)
		case KindBid:
			b := evs[i].Bid
			if a, ok := arrived[b.Auction]; ok {
				join(a, b)
			} else {
				waiting[b.Auction] = append(waiting[b.Auction], b)
			}
		}
	}
}

// sqlQ4 (q4): per category, AVG over auctions of MAX(joined bid price). A row
// (category, avg) is emitted whenever some auction's max changes (its first
// joined bid, or a strictly higher one). AVG is sum/count truncated.
func sqlQ4(evs []Event) []string {
	type catAgg struct{ sum, n int64 }
	maxOf := map[int64]int64{} // auction id -> current max (present once joined)
	cats := map[int64]*catAgg{}
	var out []string
	sqlJoinAuctionBids(evs, func(a *Auction, b *Bid) {
		c := cats[a.Category]
		if c == nil {
			c = &catAgg{}
			cats[a.Category] = c
		}
		old, ok := maxOf[a.ID]
		switch {
		case !ok:
			c.n++
		case b.Price > old:
			c.sum -= old
		default:
			return // max unchanged
		}
		maxOf[a.ID] = b.Price
		c.sum += b.Price
		out = append(out, sqlRow(sqlItoa(a.Category), sqlItoa(c.sum/c.n)))
	})
	return out
}

// sqlQ9 (q9): per auction, the joined bid with the highest price, then earliest
// dateTime (ties on both: the earlier arrival stays). The full row is
// emitted whenever the auction's best bid changes.
// SELECT A.* (id, itemName, description, initialBid, reserve, dateTime,
// expires, seller, category, extra), B.auction, B.bidder, B.price,
// B.dateTime, B.extra.
func sqlQ9(evs []Event) []string {
	best := map[int64]*Bid{}
	var out []string
	sqlJoinAuctionBids(evs, func(a *Auction, b *Bid) {
		if cur, ok := best[a.ID]; ok {
			better := b.Price > cur.Price || (b.Price == cur.Price && b.DateTime < cur.DateTime)
			if !better {
				return
			}
		}
		best[a.ID] = b
		out = append(out, sqlRow(
			sqlItoa(a.ID), a.ItemName, a.Description, sqlItoa(a.InitialBid), sqlItoa(a.Reserve), sqlItoa(a.DateTime),
			sqlItoa(a.Expires), sqlItoa(a.Seller), sqlItoa(a.Category), a.Extra,
			sqlItoa(b.Auction), sqlItoa(b.Bidder), sqlItoa(b.Price), sqlItoa(b.DateTime), b.Extra))
	})
	return out
}
