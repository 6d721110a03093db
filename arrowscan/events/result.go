package events

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Result is a query's answer: a small table whose cells are int64, float64
// or string, in a deterministic row order, and the number of rows the query
// read. Results of the same query over the same data are equal cell for
// cell (floats bit for bit) whatever mode the files were read in: every
// mode delivers the batches in the same order and the queries accumulate in
// that order.
type Result struct {
	Query       string
	Columns     []string
	Rows        [][]any
	RowsScanned int64
}

// String prints the table, aligned, with a last line counting rows.
func (r *Result) String() string {
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(r.Columns, "\t")+"\t")
	for _, row := range r.Rows {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = formatCell(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintf(&sb, "(%s: %d result rows, %d rows scanned)\n", r.Query, len(r.Rows), r.RowsScanned)
	return sb.String()
}

// formatCell prints floats with three decimals, which is what a reader
// wants to see; Equal compares the exact values.
func formatCell(c any) string {
	switch v := c.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', 3, 64)
	case string:
		return v
	}
	return fmt.Sprintf("%v", c)
}

// exactCell prints a cell so that different values print differently.
func exactCell(c any) string {
	switch v := c.(type) {
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return strconv.Quote(v)
	}
	return formatCell(c)
}

// Equal returns nil when r and o are the same result, or an error wrapping
// ErrMismatch that names the first difference: query, column names, rows
// scanned, number of rows, or the first differing cell (row number, the row's
// first cell as its key, column). Floats are compared bit for bit, except
// that any two NaNs are equal.
func (r *Result) Equal(o *Result) error {
	if r == nil || o == nil {
		if r == o {
			return nil
		}
		return fmt.Errorf("%w: one result is nil", ErrMismatch)
	}
	if r.Query != o.Query {
		return fmt.Errorf("%w: query %q vs %q", ErrMismatch, r.Query, o.Query)
	}
	if len(r.Columns) != len(o.Columns) {
		return fmt.Errorf("%w: %s: %d columns vs %d", ErrMismatch, r.Query, len(r.Columns), len(o.Columns))
	}
	for i := range r.Columns {
		if r.Columns[i] != o.Columns[i] {
			return fmt.Errorf("%w: %s: column %d is %q vs %q", ErrMismatch, r.Query, i, r.Columns[i], o.Columns[i])
		}
	}
	if r.RowsScanned != o.RowsScanned {
		return fmt.Errorf("%w: %s: %d rows scanned vs %d", ErrMismatch, r.Query, r.RowsScanned, o.RowsScanned)
	}
	for i := 0; i < min(len(r.Rows), len(o.Rows)); i++ {
		a, b := r.Rows[i], o.Rows[i]
		if len(a) != len(b) {
			return fmt.Errorf("%w: %s: row %d has %d cells vs %d", ErrMismatch, r.Query, i, len(a), len(b))
		}
		for j := range a {
			if !cellEqual(a[j], b[j]) {
				col := fmt.Sprintf("column %d", j)
				if j < len(r.Columns) {
					col = "column " + r.Columns[j]
				}
				key := ""
				if len(r.Columns) > 0 {
					key = fmt.Sprintf(" (%s=%s)", r.Columns[0], exactCell(a[0]))
				}
				return fmt.Errorf("%w: %s: row %d%s %s: %s vs %s", ErrMismatch, r.Query, i,
					key, col, exactCell(a[j]), exactCell(b[j]))
			}
		}
	}
	if len(r.Rows) != len(o.Rows) {
		return fmt.Errorf("%w: %s: %d result rows vs %d", ErrMismatch, r.Query, len(r.Rows), len(o.Rows))
	}
	return nil
}

func cellEqual(a, b any) bool {
	switch x := a.(type) {
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		if !ok {
			return false
		}
		if math.IsNaN(x) && math.IsNaN(y) {
			return true
		}
		return math.Float64bits(x) == math.Float64bits(y)
	}
	return false
}
