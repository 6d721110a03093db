package scanbench

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/ringstore/ringstore/arrowscan/events"
)

// The reference results travel between child processes in a file of JSON
// that keeps every cell exact: the type of each cell is written beside it
// and floats are written as their IEEE 754 bits, so a result read back is
// equal (events.Result.Equal) to the one written.
//
//	{"<query>": {"mode": "mmap", "query": ..., "columns": [...], "rows_scanned": N,
//	             "rows": [[{"i": 12}, {"f": "0x4059000000000000"}, {"s": "DE"}], ...]}, ...}

type jsonResult struct {
	Mode        string       `json:"mode"` // the mode whose run gave the result
	Query       string       `json:"query"`
	Columns     []string     `json:"columns"`
	RowsScanned int64        `json:"rows_scanned"`
	Rows        [][]jsonCell `json:"rows"`
}

type jsonCell struct {
	I *int64  `json:"i,omitempty"`
	F *string `json:"f,omitempty"` // float64 bits, hexadecimal
	S *string `json:"s,omitempty"`
}

// refResult is a reference result and the mode that produced it.
type refResult struct {
	mode string
	*events.Result
}

func encodeResults(rs map[string]refResult) ([]byte, error) {
	out := map[string]jsonResult{}
	names := make([]string, 0, len(rs))
	for n := range rs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := rs[n]
		jr := jsonResult{Mode: r.mode, Query: r.Query, Columns: r.Columns, RowsScanned: r.RowsScanned, Rows: make([][]jsonCell, len(r.Rows))}
		for i, row := range r.Rows {
			jr.Rows[i] = make([]jsonCell, len(row))
			for j, c := range row {
				switch v := c.(type) {
				case int64:
					jr.Rows[i][j].I = &v
				case float64:
					s := fmt.Sprintf("%#x", math.Float64bits(v))
					jr.Rows[i][j].F = &s
				case string:
					jr.Rows[i][j].S = &v
				default:
					return nil, fmt.Errorf("reference results: query %s row %d column %d: cell of type %T", n, i, j, c)
				}
			}
		}
		out[n] = jr
	}
	return json.Marshal(out)
}

func decodeResults(data []byte) (map[string]refResult, error) {
	var in map[string]jsonResult
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("reference results: %w", err)
	}
	rs := make(map[string]refResult, len(in))
	for n, jr := range in {
		if jr.Query != n {
			return nil, fmt.Errorf("reference results: entry %q holds query %q", n, jr.Query)
		}
		r := &events.Result{Query: jr.Query, Columns: jr.Columns, RowsScanned: jr.RowsScanned, Rows: make([][]any, len(jr.Rows))}
		for i, row := range jr.Rows {
			r.Rows[i] = make([]any, len(row))
			for j, c := range row {
				set := 0
				if c.I != nil {
					r.Rows[i][j], set = *c.I, set+1
				}
				if c.F != nil {
					var bits uint64
					if _, err := fmt.Sscanf(*c.F, "0x%x", &bits); err != nil || fmt.Sprintf("%#x", bits) != *c.F {
						return nil, fmt.Errorf("reference results: query %s row %d column %d: bad float bits %q", n, i, j, *c.F)
					}
					r.Rows[i][j], set = math.Float64frombits(bits), set+1
				}
				if c.S != nil {
					r.Rows[i][j], set = *c.S, set+1
				}
				if set != 1 {
					return nil, fmt.Errorf("reference results: query %s row %d column %d: a cell needs exactly one of i, f, s", n, i, j)
				}
			}
		}
		rs[n] = refResult{jr.Mode, r}
	}
	return rs, nil
}
