package events

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// Reference computes the named query the slow, obvious way, as the oracle
// the fast path (Run, Execution) is checked against: arrow-go's own
// ipc.FileReader reads every column of every record batch, and each row is
// turned into an event and folded into maps keyed by value, row at a time.
// It shares nothing with the fast path but the query's definition (its
// name, window fractions and result columns) and Params.
func Reference(paths []string, name string) (*Result, error) {
	q, err := QueryByName(name)
	if err != nil {
		return nil, err
	}
	readers := make([]*ipc.FileReader, 0, len(paths))
	defer func() {
		for _, r := range readers {
			r.Close()
		}
	}()
	schemas := make([]*arrow.Schema, 0, len(paths))
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("events: reference: %w", err)
		}
		defer f.Close()
		r, err := ipc.NewFileReader(f)
		if err != nil {
			return nil, fmt.Errorf("events: reference: %s: %w", path, err)
		}
		readers = append(readers, r)
		schemas = append(schemas, r.Schema())
	}
	p, err := ParamsOf(paths, schemas)
	if err != nil {
		return nil, fmt.Errorf("events: reference: %w", err)
	}
	ref := newReferenceQuery(name, p)
	scanned, err := referenceScan(paths, readers, ref)
	if err != nil {
		return nil, err
	}
	return &Result{Query: q.Name, Columns: q.ResultColumns, Rows: ref.rows(), RowsScanned: scanned}, nil
}

// referenceScan feeds every row of every file to ref. arrow-go can panic on
// a malformed file; that comes back as an error naming the file and batch.
func referenceScan(paths []string, readers []*ipc.FileReader, ref referenceQuery) (scanned int64, err error) {
	fi, b := 0, 0
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("events: reference: %s: batch %d: %w: arrow-go panicked: %v", paths[fi], b, ErrBadData, v)
		}
	}()
	for fi = range readers {
		r := readers[fi]
		for b = 0; b < r.NumRecords(); b++ {
			rec, err := r.RecordBatch(b)
			if err != nil {
				return 0, fmt.Errorf("events: reference: %s: batch %d: %w", paths[fi], b, err)
			}
			rows, err := newRecordRows(rec)
			if err != nil {
				return 0, fmt.Errorf("events: reference: %s: batch %d: %w", paths[fi], b, err)
			}
			for row := 0; row < int(rec.NumRows()); row++ {
				ev, err := rows.event(row)
				if err != nil {
					return 0, fmt.Errorf("events: reference: %s: batch %d: %w", paths[fi], b, err)
				}
				ref.add(ev)
			}
			scanned += rec.NumRows()
		}
	}
	return scanned, nil
}

// event is one row of the event schema.
type event struct {
	ts, customer, session int64
	country, eventType    string
	latency               float64
	bytes                 int64
	price                 float64
	hasPrice              bool
	status                int32
	userAgent             string
}

// recordRows reads the rows of one full-width record as events, through
// arrow's accessors.
type recordRows struct {
	ts                         *array.Timestamp
	customer, session, bytes   *array.Int64
	country, eventType         *array.Dictionary
	countryValues, eventValues *array.String
	latency, price             *array.Float64
	status                     *array.Int32
	userAgent                  *array.String
}

// newRecordRows finds every column of the event schema in rec by name.
func newRecordRows(rec arrow.RecordBatch) (*recordRows, error) {
	var err error
	column := func(name string) arrow.Array {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			if err == nil {
				err = fmt.Errorf("%w: %d columns named %s", ErrSchema, len(idx), name)
			}
			return nil
		}
		return rec.Column(idx[0])
	}
	typed := func(ok bool, name string) {
		if !ok && err == nil {
			err = fmt.Errorf("%w: column %s has the wrong type", ErrSchema, name)
		}
	}
	var r recordRows
	var ok bool
	r.ts, ok = column(ColTS).(*array.Timestamp)
	typed(ok, ColTS)
	r.customer, ok = column(ColCustomerID).(*array.Int64)
	typed(ok, ColCustomerID)
	r.session, ok = column(ColSessionID).(*array.Int64)
	typed(ok, ColSessionID)
	r.country, ok = column(ColCountry).(*array.Dictionary)
	typed(ok, ColCountry)
	r.eventType, ok = column(ColEventType).(*array.Dictionary)
	typed(ok, ColEventType)
	r.latency, ok = column(ColLatencyMS).(*array.Float64)
	typed(ok, ColLatencyMS)
	r.bytes, ok = column(ColBytes).(*array.Int64)
	typed(ok, ColBytes)
	r.price, ok = column(ColPrice).(*array.Float64)
	typed(ok, ColPrice)
	r.status, ok = column(ColStatus).(*array.Int32)
	typed(ok, ColStatus)
	r.userAgent, ok = column(ColUserAgent).(*array.String)
	typed(ok, ColUserAgent)
	if err != nil {
		return nil, err
	}
	r.countryValues, ok = r.country.Dictionary().(*array.String)
	typed(ok, ColCountry)
	r.eventValues, ok = r.eventType.Dictionary().(*array.String)
	typed(ok, ColEventType)
	return &r, err
}

// event returns row i.
func (r *recordRows) event(i int) (event, error) {
	lookup := func(d *array.Dictionary, values *array.String, name string) (string, error) {
		k := d.GetValueIndex(i)
		if k < 0 || k >= values.Len() {
			return "", fmt.Errorf("%w: row %d: %s dictionary index %d out of range", ErrBadData, i, name, k)
		}
		return strings.Clone(values.Value(k)), nil
	}
	country, err := lookup(r.country, r.countryValues, ColCountry)
	if err != nil {
		return event{}, err
	}
	eventType, err := lookup(r.eventType, r.eventValues, ColEventType)
	if err != nil {
		return event{}, err
	}
	ev := event{
		ts:        int64(r.ts.Value(i)),
		customer:  r.customer.Value(i),
		session:   r.session.Value(i),
		country:   country,
		eventType: eventType,
		latency:   r.latency.Value(i),
		bytes:     r.bytes.Value(i),
		hasPrice:  r.price.IsValid(i),
		status:    r.status.Value(i),
		userAgent: r.userAgent.Value(i),
	}
	if ev.hasPrice {
		ev.price = r.price.Value(i)
	}
	return ev, nil
}

// referenceQuery is a query's row-at-a-time oracle.
type referenceQuery interface {
	add(ev event)
	rows() [][]any
}

func newReferenceQuery(name string, p Params) referenceQuery {
	switch name {
	case "bytes_total":
		return &refBytesTotal{}
	case "country_window":
		return &refCountryWindow{lo: p.at(2, 5), hi: p.at(3, 5), groups: map[string]*[2]int64{}}
	case "top_customers":
		return &refTopCustomers{groups: map[int64]*refRevenue{}}
	case "latency_by_type_hour":
		return &refLatency{lo: p.at(3, 4), hi: p.End, groups: map[[2]string]*refLatencyGroup{}}
	case "server_errors_by_country":
		return &refServerErrors{sessions: map[string]map[int64]bool{}, errors: map[string]int64{}}
	case "mobile_share_by_country":
		return &refMobile{groups: map[string]*[2]int64{}}
	case "event_summary":
		return &refSummary{lo: p.at(1, 4), hi: p.at(3, 4), groups: map[string]*refTypeSummary{}}
	}
	panic("events: no reference for query " + name) // every name in queries has one; TestReferenceCoversQueries checks
}

type refBytesTotal struct{ events, sum, lo, hi int64 }

func (r *refBytesTotal) add(ev event) {
	if r.events == 0 {
		r.lo, r.hi = ev.bytes, ev.bytes
	}
	r.lo, r.hi = min(r.lo, ev.bytes), max(r.hi, ev.bytes)
	r.events++
	r.sum += ev.bytes
}

func (r *refBytesTotal) rows() [][]any { return [][]any{{r.events, r.sum, r.lo, r.hi}} }

type refCountryWindow struct {
	lo, hi int64
	groups map[string]*[2]int64 // events, bytes
}

func (r *refCountryWindow) add(ev event) {
	if ev.ts < r.lo || ev.ts >= r.hi {
		return
	}
	g := r.groups[ev.country]
	if g == nil {
		g = new([2]int64)
		r.groups[ev.country] = g
	}
	g[0]++
	g[1] += ev.bytes
}

func (r *refCountryWindow) rows() [][]any {
	var rows [][]any
	for c, g := range r.groups {
		rows = append(rows, []any{c, g[0], g[1]})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i][1].(int64) != rows[j][1].(int64) {
			return rows[i][1].(int64) > rows[j][1].(int64)
		}
		return rows[i][0].(string) < rows[j][0].(string)
	})
	return rows
}

type refRevenue struct {
	n   int64
	sum float64
}

type refTopCustomers struct{ groups map[int64]*refRevenue }

func (r *refTopCustomers) add(ev event) {
	if ev.eventType != "purchase" || !ev.hasPrice {
		return
	}
	g := r.groups[ev.customer]
	if g == nil {
		g = &refRevenue{}
		r.groups[ev.customer] = g
	}
	g.n++
	g.sum += ev.price
}

func (r *refTopCustomers) rows() [][]any {
	rows := [][]any{}
	for c, g := range r.groups {
		rows = append(rows, []any{c, g.n, g.sum})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i][2].(float64) != rows[j][2].(float64) {
			return rows[i][2].(float64) > rows[j][2].(float64)
		}
		return rows[i][0].(int64) < rows[j][0].(int64)
	})
	if len(rows) > 10 {
		rows = rows[:10]
	}
	return rows
}

type refLatencyGroup struct {
	n, slow  int64
	sum, max float64
}

type refLatency struct {
	lo, hi int64
	groups map[[2]string]*refLatencyGroup // hour, event type
}

func (r *refLatency) add(ev event) {
	if ev.ts < r.lo || ev.ts >= r.hi {
		return
	}
	key := [2]string{time.UnixMicro(ev.ts).UTC().Truncate(time.Hour).Format(time.RFC3339), ev.eventType}
	g := r.groups[key]
	if g == nil {
		g = &refLatencyGroup{max: ev.latency}
		r.groups[key] = g
	}
	g.n++
	g.sum += ev.latency
	if ev.latency > g.max {
		g.max = ev.latency
	}
	if ev.latency >= 250 {
		g.slow++
	}
}

func (r *refLatency) rows() [][]any {
	rows := [][]any{}
	for k, g := range r.groups {
		rows = append(rows, []any{k[0], k[1], g.n, g.sum / float64(g.n), g.max, g.slow})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i][0].(string) != rows[j][0].(string) {
			return rows[i][0].(string) < rows[j][0].(string)
		}
		return rows[i][1].(string) < rows[j][1].(string)
	})
	return rows
}

type refServerErrors struct {
	errors   map[string]int64
	sessions map[string]map[int64]bool
}

func (r *refServerErrors) add(ev event) {
	if ev.status < 500 {
		return
	}
	r.errors[ev.country]++
	if r.sessions[ev.country] == nil {
		r.sessions[ev.country] = map[int64]bool{}
	}
	r.sessions[ev.country][ev.session] = true
}

func (r *refServerErrors) rows() [][]any {
	rows := [][]any{}
	for c, n := range r.errors {
		rows = append(rows, []any{c, n, int64(len(r.sessions[c]))})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i][1].(int64) != rows[j][1].(int64) {
			return rows[i][1].(int64) > rows[j][1].(int64)
		}
		return rows[i][0].(string) < rows[j][0].(string)
	})
	return rows
}

type refMobile struct{ groups map[string]*[2]int64 } // events, mobile events

func (r *refMobile) add(ev event) {
	g := r.groups[ev.country]
	if g == nil {
		g = new([2]int64)
		r.groups[ev.country] = g
	}
	g[0]++
	if strings.Contains(ev.userAgent, "Mobile") {
		g[1]++
	}
}

func (r *refMobile) rows() [][]any {
	rows := [][]any{}
	for c, g := range r.groups {
		rows = append(rows, []any{c, g[0], g[1], float64(g[1]) / float64(g[0])})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i][0].(string) < rows[j][0].(string) })
	return rows
}

type refTypeSummary struct {
	n, bytes, clientErrors, serverErrors, uaBytes, maxSession int64
	latencySum, revenue                                       float64
	customers                                                 map[int64]bool
	countries                                                 map[string]bool
}

type refSummary struct {
	lo, hi int64
	groups map[string]*refTypeSummary
}

func (r *refSummary) add(ev event) {
	if ev.ts < r.lo || ev.ts >= r.hi {
		return
	}
	g := r.groups[ev.eventType]
	if g == nil {
		g = &refTypeSummary{customers: map[int64]bool{}, countries: map[string]bool{}, maxSession: ev.session}
		r.groups[ev.eventType] = g
	}
	g.n++
	g.customers[ev.customer] = true
	g.countries[ev.country] = true
	g.bytes += ev.bytes
	g.latencySum += ev.latency
	if ev.hasPrice {
		g.revenue += ev.price
	}
	if ev.status >= 500 {
		g.serverErrors++
	} else if ev.status >= 400 {
		g.clientErrors++
	}
	g.uaBytes += int64(len(ev.userAgent))
	g.maxSession = max(g.maxSession, ev.session)
}

func (r *refSummary) rows() [][]any {
	rows := [][]any{}
	for t, g := range r.groups {
		n := float64(g.n)
		rows = append(rows, []any{t, g.n, int64(len(g.customers)), int64(len(g.countries)), g.bytes,
			g.latencySum / n, g.revenue, g.clientErrors, g.serverErrors, float64(g.uaBytes) / n, g.maxSession})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i][1].(int64) != rows[j][1].(int64) {
			return rows[i][1].(int64) > rows[j][1].(int64)
		}
		return rows[i][0].(string) < rows[j][0].(string)
	})
	return rows
}
