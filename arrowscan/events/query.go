package events

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/ringstore/ringstore/internal/intscan"
)

// Query is one of the named analytic queries. Columns are the only columns
// it reads, in the order it wants them (a scan projects exactly these).
type Query struct {
	Name        string
	Description string
	Columns     []string
	// ResultColumns names the columns of its Result.
	ResultColumns []string

	newAggregate func(Params) aggregate
}

// aggregate is a query's state while it runs: add folds one record's
// columns into it, rows makes the result table. Implementations are in
// queries.go; each is used by one goroutine.
type aggregate interface {
	// add gets the record's columns in Query.Columns order, their types and
	// nulls already checked by execution.add.
	add(cols []arrow.Array) error
	rows() [][]any
}

// Queries returns the named queries, narrowest first. The slice and the
// queries are the caller's to keep.
func Queries() []Query {
	qs := make([]Query, len(queries))
	for i, q := range queries {
		q.Columns = append([]string(nil), q.Columns...)
		q.ResultColumns = append([]string(nil), q.ResultColumns...)
		qs[i] = q
	}
	return qs
}

// QueryByName returns the named query, or an error wrapping
// ErrUnknownQuery that lists the known names.
func QueryByName(name string) (Query, error) {
	for _, q := range Queries() {
		if q.Name == name {
			return q, nil
		}
	}
	return Query{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownQuery, name, queryNames())
}

func queryNames() string {
	s := ""
	for i, q := range queries {
		if i > 0 {
			s += ", "
		}
		s += q.Name
	}
	return s
}

// Batches is a sequence of record batches in order: what a scan of one
// file delivers. *arrowscan.Scanner and *ipc.Reader satisfy it. Record's
// result needs to stay valid only until the next Next.
type Batches interface {
	Next() bool
	Record() arrow.RecordBatch
	Err() error
}

// Execution runs one query over records fed to it in order. It is what Run
// uses; use it directly to run a query over records from elsewhere. Not
// safe for concurrent use: one goroutine per Execution.
type Execution struct {
	q       Query
	agg     aggregate
	scanned int64
	cols    []arrow.Array
	fields  []arrow.Field // the event schema's field per query column
}

// NewExecution starts the named query with parameters p.
func NewExecution(name string, p Params) (*Execution, error) {
	q, err := QueryByName(name)
	if err != nil {
		return nil, err
	}
	if p.End <= p.Start {
		return nil, fmt.Errorf("%w: empty time range %s", ErrBadOptions, p)
	}
	e := &Execution{q: q, agg: q.newAggregate(p), cols: make([]arrow.Array, len(q.Columns)), fields: make([]arrow.Field, len(q.Columns))}
	for i, c := range q.Columns {
		e.fields[i], _ = fieldByName(c)
	}
	return e, nil
}

// Query returns the query being run.
func (e *Execution) Query() Query { return e.q }

// CheckSchema checks that schema has every column the query reads, with the
// event schema's types; where names it in errors (a file's path).
func (e *Execution) CheckSchema(where string, schema *arrow.Schema) error {
	for _, c := range e.q.Columns {
		idx := schema.FieldIndices(c)
		if len(idx) == 0 {
			return fmt.Errorf("%s: %w: no column %s (query %s reads %v)", where, ErrSchema, c, e.q.Name, e.q.Columns)
		}
		if len(idx) > 1 {
			return fmt.Errorf("%s: %w: %d columns named %s", where, ErrSchema, len(idx), c)
		}
		if err := checkColumn(where, schema.Field(idx[0])); err != nil {
			return err
		}
	}
	return nil
}

// Add folds one record into the query. The record may hold more columns
// than the query reads, in any order: they are found by name. where names
// the record in errors (file and batch).
func (e *Execution) Add(where string, rec arrow.RecordBatch) error {
	if err := e.CheckSchema(where, rec.Schema()); err != nil {
		return err
	}
	n := rec.NumRows()
	for i, c := range e.q.Columns {
		col := rec.Column(rec.Schema().FieldIndices(c)[0])
		if int64(col.Len()) != n {
			return fmt.Errorf("%s: %w: column %s has %d rows, the record %d", where, ErrBadData, c, col.Len(), n)
		}
		if !e.fields[i].Nullable && col.NullN() != 0 {
			return fmt.Errorf("%s: %w: column %s has %d nulls; the schema allows none", where, ErrBadData, c, col.NullN())
		}
		var err error
		switch a := col.(type) {
		case *array.Dictionary:
			err = checkDictionary(a)
		case *array.String:
			err = checkOffsets(a)
		}
		if err != nil {
			return fmt.Errorf("%s: %w: column %s: %v", where, ErrBadData, c, err)
		}
		e.cols[i] = col
	}
	err := e.addChecked()
	clear(e.cols)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	e.scanned += n
	return nil
}

// addChecked runs the aggregate over e.cols. The checks in Add cover what
// the generator and arrow-go can produce; a record that still makes the
// aggregate index out of range (a malformed validity bitmap, say) is
// reported as ErrBadData instead of crashing the caller.
func (e *Execution) addChecked() (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: query %s panicked on the record: %v", ErrBadData, e.q.Name, v)
		}
	}()
	return e.agg.add(e.cols)
}

// AddBatches folds every record of b into the query; where names the
// source in errors, with the batch number added.
func (e *Execution) AddBatches(where string, b Batches) error {
	i := 0
	for ; b.Next(); i++ {
		if err := e.Add(fmt.Sprintf("%s: batch %d", where, i), b.Record()); err != nil {
			return err
		}
	}
	if err := b.Err(); err != nil {
		return fmt.Errorf("%s: after batch %d: %w", where, i, err)
	}
	return nil
}

// Result returns the query's answer over everything added so far.
func (e *Execution) Result() *Result {
	return &Result{Query: e.q.Name, Columns: append([]string(nil), e.q.ResultColumns...), Rows: e.agg.rows(), RowsScanned: e.scanned}
}

// RunBatches runs the named query with parameters p over the sources in
// order (source i is named "source i" in errors).
func RunBatches(name string, p Params, sources ...Batches) (*Result, error) {
	e, err := NewExecution(name, p)
	if err != nil {
		return nil, err
	}
	for i, b := range sources {
		if err := e.AddBatches(fmt.Sprintf("source %d", i), b); err != nil {
			return nil, err
		}
	}
	return e.Result(), nil
}

// checkOffsets checks that a string column's offsets are non-negative, do
// not decrease and stay inside its data, so that every Value is in bounds;
// only when the branch-free pass finds a decrease does it look for the row.
func checkOffsets(s *array.String) error {
	if s.Len() == 0 {
		return nil
	}
	offsets := s.ValueOffsets()
	var dataLen int
	if bufs := s.Data().Buffers(); len(bufs) > 2 && bufs[2] != nil {
		dataLen = bufs[2].Len()
	}
	if offsets[0] < 0 {
		return fmt.Errorf("row 0: negative string offset %d", offsets[0])
	}
	if !intscan.NonDecreasing(offsets) {
		for i := 1; i < len(offsets); i++ {
			if offsets[i] < offsets[i-1] {
				return fmt.Errorf("row %d: string offsets decrease (%d after %d)", i-1, offsets[i], offsets[i-1])
			}
		}
	}
	if last := offsets[len(offsets)-1]; int(last) > dataLen {
		return fmt.Errorf("string offsets end at %d, past the %d bytes of string data", last, dataLen)
	}
	return nil
}

// checkDictionary checks that a dictionary column's values are strings
// without nulls and that every index points into them.
func checkDictionary(d *array.Dictionary) error {
	values, ok := d.Dictionary().(*array.String)
	if !ok {
		return fmt.Errorf("dictionary values are %s, not strings", d.Dictionary().DataType())
	}
	if values.NullN() != 0 {
		return fmt.Errorf("dictionary holds %d nulls", values.NullN())
	}
	if err := checkOffsets(values); err != nil {
		return fmt.Errorf("dictionary: %v", err)
	}
	switch idx := d.Indices().(type) {
	case *array.Int8:
		return indexesBelow(idx.Int8Values(), values.Len())
	case *array.Int16:
		return indexesBelow(idx.Int16Values(), values.Len())
	default:
		return fmt.Errorf("dictionary indexes are %s", d.Indices().DataType())
	}
}

// indexesBelow checks 0 <= v < n for every index; only when the
// branch-free pass finds one outside does it look for the first bad row.
func indexesBelow[T int8 | int16](idx []T, n int) error {
	if intscan.AllBelow(idx, uint64(n)) {
		return nil
	}
	for i, v := range idx {
		if v < 0 || int(v) >= n {
			return fmt.Errorf("row %d: index %d outside the dictionary of %d values", i, v, n)
		}
	}
	return nil
}
