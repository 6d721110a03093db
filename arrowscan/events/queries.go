package events

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// The named queries. Windows are fractions of the data's time range
// (Params), so each selects a fixed share of the rows. Every float sum is
// accumulated in row order (file, batch, row), which every scan mode
// delivers identically, so results are equal bit for bit across modes.
var queries = []Query{
	{
		Name:          "bytes_total",
		Description:   "events, total/min/max bytes over all rows (narrow: one int64 column)",
		Columns:       []string{ColBytes},
		ResultColumns: []string{"events", "bytes", "min_bytes", "max_bytes"},
		newAggregate:  func(Params) aggregate { return &bytesTotal{} },
	},
	{
		Name:          "country_window",
		Description:   "events and bytes per country in the middle fifth of the time range, most events first",
		Columns:       []string{ColTS, ColCountry, ColBytes},
		ResultColumns: []string{"country", "events", "bytes"},
		newAggregate:  func(p Params) aggregate { return &countryWindow{lo: p.at(2, 5), hi: p.at(3, 5)} },
	},
	{
		Name:          "top_customers",
		Description:   "top 10 customers by purchase revenue (sum of price over purchases), with their purchase count",
		Columns:       []string{ColEventType, ColCustomerID, ColPrice},
		ResultColumns: []string{"customer_id", "purchases", "revenue"},
		newAggregate:  func(Params) aggregate { return &topCustomers{index: map[int64]int32{}} },
	},
	{
		Name:          "latency_by_type_hour",
		Description:   "per hour and event type in the last quarter of the time range: events, mean and max latency_ms, events ≥ 250 ms",
		Columns:       []string{ColTS, ColEventType, ColLatencyMS},
		ResultColumns: []string{"hour", "event_type", "events", "avg_latency_ms", "max_latency_ms", "slow_events"},
		newAggregate: func(p Params) aggregate {
			return &latencyByTypeHour{lo: p.at(3, 4), hi: p.End, hours: map[int64][]latencyGroup{}}
		},
	},
	{
		Name:          "server_errors_by_country",
		Description:   "events with status ≥ 500 and the distinct sessions they hit, per country, most errors first",
		Columns:       []string{ColStatus, ColCountry, ColSessionID},
		ResultColumns: []string{"country", "error_events", "sessions"},
		newAggregate:  func(Params) aggregate { return &serverErrors{} },
	},
	{
		Name:          "mobile_share_by_country",
		Description:   "share of events whose user_agent contains \"Mobile\", per country (reads the string column)",
		Columns:       []string{ColCountry, ColUserAgent},
		ResultColumns: []string{"country", "events", "mobile_events", "mobile_share"},
		newAggregate:  func(Params) aggregate { return &mobileShare{} },
	},
	{
		Name: "event_summary",
		Description: "per event type in the middle half of the time range: events, distinct customers and countries, bytes, " +
			"mean latency, revenue, 4xx and 5xx events, mean user_agent length, highest session_id (full width: every column)",
		Columns: []string{ColTS, ColCustomerID, ColSessionID, ColCountry, ColEventType, ColLatencyMS, ColBytes, ColPrice, ColStatus, ColUserAgent},
		ResultColumns: []string{"event_type", "events", "customers", "countries", "bytes", "avg_latency_ms", "revenue",
			"client_errors", "server_errors", "avg_user_agent_len", "max_session_id"},
		newAggregate: func(p Params) aggregate { return &eventSummary{lo: p.at(1, 4), hi: p.at(3, 4)} },
	},
}

// columnAs returns cols[i] as a T, or records an error in *err.
func columnAs[T arrow.Array](cols []arrow.Array, i int, err *error) T {
	v, ok := cols[i].(T)
	if !ok && *err == nil {
		*err = fmt.Errorf("%w: column %d is a %T", ErrBadData, i, cols[i])
	}
	return v
}

// valueSet numbers the distinct values of a dictionary column in the order
// they are first seen, so that groups are keyed by value, not by a file's
// dictionary index.
type valueSet struct {
	ids   map[string]int32
	names []string
	slots []int32 // per entry of the current record's dictionary
}

// codes returns the group number of each row of d in buf. d has been
// checked by checkDictionary.
func (s *valueSet) codes(d *array.Dictionary, buf []int32) []int32 {
	if s.ids == nil {
		s.ids = map[string]int32{}
	}
	values := d.Dictionary().(*array.String)
	s.slots = s.slots[:0]
	for i := 0; i < values.Len(); i++ {
		v := values.Value(i) // aliases the record's memory
		id, ok := s.ids[v]
		if !ok {
			id = int32(len(s.names))
			v = strings.Clone(v)
			s.ids[v] = id
			s.names = append(s.names, v)
		}
		s.slots = append(s.slots, id)
	}
	switch idx := d.Indices().(type) {
	case *array.Int8:
		vals := idx.Int8Values()
		buf = grow(buf[:0], len(vals))[:len(vals)]
		var slots [256]int32 // indexed by the uint8 of an index: no bounds checks
		copy(slots[:], s.slots)
		for i, v := range vals {
			buf[i] = slots[uint8(v)]
		}
	case *array.Int16:
		vals := idx.Int16Values()
		buf = grow(buf[:0], len(vals))[:len(vals)]
		slots := s.slots
		for i, v := range vals {
			buf[i] = slots[v]
		}
	default:
		buf = buf[:0]
	}
	return buf
}

// lookup returns the group number of value v, if it was seen.
func (s *valueSet) lookup(v string) (int32, bool) {
	id, ok := s.ids[v]
	return id, ok
}

// grow returns s with at least n elements.
func grow[T any](s []T, n int) []T {
	if len(s) < n {
		s = append(s, make([]T, n-len(s))...)
	}
	return s
}

// bytes_total

type bytesTotal struct {
	events, sum, lo, hi int64
}

func (a *bytesTotal) add(cols []arrow.Array) error {
	var err error
	b := columnAs[*array.Int64](cols, 0, &err)
	if err != nil {
		return err
	}
	for _, v := range b.Int64Values() {
		if a.events == 0 || v < a.lo {
			a.lo = v
		}
		if a.events == 0 || v > a.hi {
			a.hi = v
		}
		a.events++
		a.sum += v
	}
	return nil
}

func (a *bytesTotal) rows() [][]any { return [][]any{{a.events, a.sum, a.lo, a.hi}} }

// country_window

type countryWindow struct {
	lo, hi    int64
	countries valueSet
	codes     []int32
	events    []int64
	bytes     []int64
}

func (a *countryWindow) add(cols []arrow.Array) error {
	var err error
	ts := columnAs[*array.Timestamp](cols, 0, &err)
	country := columnAs[*array.Dictionary](cols, 1, &err)
	b := columnAs[*array.Int64](cols, 2, &err)
	if err != nil {
		return err
	}
	a.codes = a.countries.codes(country, a.codes)
	a.events = grow(a.events, len(a.countries.names))
	a.bytes = grow(a.bytes, len(a.countries.names))
	bv := b.Int64Values()
	for i, t := range ts.TimestampValues() {
		if int64(t) >= a.lo && int64(t) < a.hi {
			c := a.codes[i]
			a.events[c]++
			a.bytes[c] += bv[i]
		}
	}
	return nil
}

func (a *countryWindow) rows() [][]any {
	var rows [][]any
	for c, n := range a.events {
		if n > 0 {
			rows = append(rows, []any{a.countries.names[c], n, a.bytes[c]})
		}
	}
	sortRows(rows, byInt64Desc(1), byString(0))
	return rows
}

// top_customers

type topCustomers struct {
	types     valueSet
	codes     []int32
	index     map[int64]int32 // customer → position in customers
	customers []customerRevenue
}

type customerRevenue struct {
	id        int64
	purchases int64
	revenue   float64
}

func (a *topCustomers) add(cols []arrow.Array) error {
	var err error
	et := columnAs[*array.Dictionary](cols, 0, &err)
	cust := columnAs[*array.Int64](cols, 1, &err)
	price := columnAs[*array.Float64](cols, 2, &err)
	if err != nil {
		return err
	}
	a.codes = a.types.codes(et, a.codes)
	purchase, ok := a.types.lookup("purchase")
	if !ok {
		return nil
	}
	cv, pv := cust.Int64Values(), price.Float64Values()
	nulls := price.NullN() > 0
	for i, c := range a.codes {
		if c != purchase || nulls && price.IsNull(i) {
			continue
		}
		k, ok := a.index[cv[i]]
		if !ok {
			k = int32(len(a.customers))
			a.index[cv[i]] = k
			a.customers = append(a.customers, customerRevenue{id: cv[i]})
		}
		a.customers[k].purchases++
		a.customers[k].revenue += pv[i]
	}
	return nil
}

func (a *topCustomers) rows() [][]any {
	cs := slices.Clone(a.customers)
	slices.SortFunc(cs, func(x, y customerRevenue) int {
		if c := cmp.Compare(y.revenue, x.revenue); c != 0 {
			return c
		}
		return cmp.Compare(x.id, y.id)
	})
	rows := [][]any{}
	for _, c := range cs[:min(10, len(cs))] {
		rows = append(rows, []any{c.id, c.purchases, c.revenue})
	}
	return rows
}

// latency_by_type_hour

const hourUS = int64(time.Hour / time.Microsecond)

// floorDiv is a/b rounded down, for timestamps before 1970 too.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

type latencyGroup struct {
	events, slow int64
	sum, max     float64
}

type latencyByTypeHour struct {
	lo, hi   int64
	types    valueSet
	codes    []int32
	hours    map[int64][]latencyGroup // hour number → groups by event type
	lastHour int64
	last     []latencyGroup // hours[lastHour]; nil before the first row
}

func (a *latencyByTypeHour) add(cols []arrow.Array) error {
	var err error
	ts := columnAs[*array.Timestamp](cols, 0, &err)
	et := columnAs[*array.Dictionary](cols, 1, &err)
	lat := columnAs[*array.Float64](cols, 2, &err)
	if err != nil {
		return err
	}
	a.codes = a.types.codes(et, a.codes)
	n := len(a.types.names)
	lv := lat.Float64Values()
	for i, t := range ts.TimestampValues() {
		if int64(t) < a.lo || int64(t) >= a.hi {
			continue
		}
		h := floorDiv(int64(t), hourUS)
		if a.last == nil || h != a.lastHour {
			if a.last != nil {
				a.hours[a.lastHour] = a.last // it may have grown
			}
			a.lastHour, a.last = h, a.hours[h]
			if a.last == nil {
				a.last = make([]latencyGroup, n)
			}
		}
		if len(a.last) < n {
			a.last = grow(a.last, n)
		}
		g := &a.last[a.codes[i]]
		v := lv[i]
		if g.events == 0 || v > g.max {
			g.max = v
		}
		g.events++
		g.sum += v
		if v >= 250 {
			g.slow++
		}
	}
	return nil
}

func (a *latencyByTypeHour) rows() [][]any {
	if a.last != nil {
		a.hours[a.lastHour] = a.last
	}
	rows := [][]any{}
	for h, groups := range a.hours {
		hour := time.UnixMicro(h * hourUS).UTC().Format(time.RFC3339)
		for c, g := range groups {
			if g.events > 0 {
				rows = append(rows, []any{hour, a.types.names[c], g.events, g.sum / float64(g.events), g.max, g.slow})
			}
		}
	}
	sortRows(rows, byString(0), byString(1))
	return rows
}

// server_errors_by_country

type serverErrors struct {
	countries valueSet
	codes     []int32
	errors    []int64
	sessions  []map[int64]struct{}
}

func (a *serverErrors) add(cols []arrow.Array) error {
	var err error
	status := columnAs[*array.Int32](cols, 0, &err)
	country := columnAs[*array.Dictionary](cols, 1, &err)
	sess := columnAs[*array.Int64](cols, 2, &err)
	if err != nil {
		return err
	}
	a.codes = a.countries.codes(country, a.codes)
	a.errors = grow(a.errors, len(a.countries.names))
	a.sessions = grow(a.sessions, len(a.countries.names))
	sv := sess.Int64Values()
	for i, s := range status.Int32Values() {
		if s < 500 {
			continue
		}
		c := a.codes[i]
		a.errors[c]++
		if a.sessions[c] == nil {
			a.sessions[c] = map[int64]struct{}{}
		}
		a.sessions[c][sv[i]] = struct{}{}
	}
	return nil
}

func (a *serverErrors) rows() [][]any {
	rows := [][]any{}
	for c, n := range a.errors {
		if n > 0 {
			rows = append(rows, []any{a.countries.names[c], n, int64(len(a.sessions[c]))})
		}
	}
	sortRows(rows, byInt64Desc(1), byString(0))
	return rows
}

// mobile_share_by_country

type mobileShare struct {
	countries valueSet
	codes     []int32
	events    []int64
	mobile    []int64
}

func (a *mobileShare) add(cols []arrow.Array) error {
	var err error
	country := columnAs[*array.Dictionary](cols, 0, &err)
	ua := columnAs[*array.String](cols, 1, &err)
	if err != nil {
		return err
	}
	a.codes = a.countries.codes(country, a.codes)
	a.events = grow(a.events, len(a.countries.names))
	a.mobile = grow(a.mobile, len(a.countries.names))
	for _, c := range a.codes {
		a.events[c]++
	}
	forEachRowContaining(ua, mobileMarker, func(row int) { a.mobile[a.codes[row]]++ })
	return nil
}

var mobileMarker = []byte("Mobile")

// forEachRowContaining calls fn, in row order, with every row of s whose
// value contains sub (not empty). It searches the column's value bytes as
// one run, so the rows without sub cost only the search, and after a match
// it goes on at the next row's start. s's offsets have been checked
// (checkOffsets).
func forEachRowContaining(s *array.String, sub []byte, fn func(row int)) {
	offs := s.ValueOffsets()
	if len(offs) < 2 {
		return
	}
	base := offs[0]
	data := s.ValueBytes()
	data = data[:offs[len(offs)-1]-base]
	row, pos := 0, 0
	for pos < len(data) {
		j := bytes.Index(data[pos:], sub)
		if j < 0 {
			return
		}
		at := pos + j
		for int(offs[row+1]-base) <= at {
			row++
		}
		end := int(offs[row+1] - base)
		if at+len(sub) > end {
			pos = at + 1 // straddles two rows: not a match in either
			continue
		}
		fn(row)
		row++
		pos = end
	}
}

func (a *mobileShare) rows() [][]any {
	rows := [][]any{}
	for c, n := range a.events {
		if n > 0 {
			rows = append(rows, []any{a.countries.names[c], n, a.mobile[c], float64(a.mobile[c]) / float64(n)})
		}
	}
	sortRows(rows, byString(0))
	return rows
}

// event_summary

type typeSummary struct {
	events, bytes, clientErrors, serverErrors, uaBytes int64
	maxSession                                         int64
	latencySum, revenue                                float64
	customers                                          int64Set
	countries                                          []bool // by country group number
}

type eventSummary struct {
	lo, hi       int64
	types        valueSet
	countries    valueSet
	typeCodes    []int32
	countryCodes []int32
	groups       []typeSummary
}

func (a *eventSummary) add(cols []arrow.Array) error {
	var err error
	ts := columnAs[*array.Timestamp](cols, 0, &err)
	cust := columnAs[*array.Int64](cols, 1, &err)
	sess := columnAs[*array.Int64](cols, 2, &err)
	country := columnAs[*array.Dictionary](cols, 3, &err)
	et := columnAs[*array.Dictionary](cols, 4, &err)
	lat := columnAs[*array.Float64](cols, 5, &err)
	b := columnAs[*array.Int64](cols, 6, &err)
	price := columnAs[*array.Float64](cols, 7, &err)
	status := columnAs[*array.Int32](cols, 8, &err)
	ua := columnAs[*array.String](cols, 9, &err)
	if err != nil {
		return err
	}
	a.typeCodes = a.types.codes(et, a.typeCodes)
	a.countryCodes = a.countries.codes(country, a.countryCodes)
	a.groups = grow(a.groups, len(a.types.names))
	nc := len(a.countries.names)
	for k := range a.groups {
		a.groups[k].countries = grow(a.groups[k].countries, nc)
	}
	cv, sv, lv, bv, pv, stv := cust.Int64Values(), sess.Int64Values(), lat.Float64Values(), b.Int64Values(), price.Float64Values(), status.Int32Values()
	priceNulls := price.NullN() > 0
	uaOffs := ua.ValueOffsets()
	for i, t := range ts.TimestampValues() {
		if int64(t) < a.lo || int64(t) >= a.hi {
			continue
		}
		g := &a.groups[a.typeCodes[i]]
		if g.events == 0 || sv[i] > g.maxSession {
			g.maxSession = sv[i]
		}
		g.events++
		g.customers.add(cv[i])
		g.countries[a.countryCodes[i]] = true
		g.bytes += bv[i]
		g.latencySum += lv[i]
		if !priceNulls || price.IsValid(i) {
			g.revenue += pv[i]
		}
		switch s := stv[i]; {
		case s >= 500:
			g.serverErrors++
		case s >= 400:
			g.clientErrors++
		}
		g.uaBytes += int64(uaOffs[i+1] - uaOffs[i])
	}
	return nil
}

func (a *eventSummary) rows() [][]any {
	rows := [][]any{}
	for c, g := range a.groups {
		if g.events == 0 {
			continue
		}
		countries := int64(0)
		for _, seen := range g.countries {
			if seen {
				countries++
			}
		}
		n := float64(g.events)
		rows = append(rows, []any{a.types.names[c], g.events, g.customers.len(), countries, g.bytes,
			g.latencySum / n, g.revenue, g.clientErrors, g.serverErrors, float64(g.uaBytes) / n, g.maxSession})
	}
	sortRows(rows, byInt64Desc(1), byString(0))
	return rows
}

// Sorting result rows: a list of comparisons, applied in turn.

type rowOrder func(a, b []any) int

func byString(col int) rowOrder {
	return func(a, b []any) int { return strings.Compare(a[col].(string), b[col].(string)) }
}

func byInt64Desc(col int) rowOrder {
	return func(a, b []any) int { return cmp.Compare(b[col].(int64), a[col].(int64)) }
}

func sortRows(rows [][]any, order ...rowOrder) {
	slices.SortFunc(rows, func(a, b []any) int {
		for _, o := range order {
			if c := o(a, b); c != 0 {
				return c
			}
		}
		return 0
	})
}
