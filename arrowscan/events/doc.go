// Package events is the analytic workload of arrowscan: a time-series event
// schema, a deterministic generator of Arrow IPC files, and a named set of
// queries whose results are checked against a row-at-a-time reference.
//
// # Schema
//
// One row per event, about 78 bytes uncompressed (measured: 78.5 B/row
// for 4M rows, no compression):
//
//	column        type                       bytes/row  values
//	───────────── ────────────────────────── ─────────  ─────────────────────────────────────
//	ts            timestamp[us, tz=UTC]      8          non-decreasing in a file; files cover
//	                                                    consecutive ranges of Start..Start+Span
//	customer_id   int64                      8          Zipf(s=1.1) over Customers, scattered ids
//	session_id    int64                      8          customer_id·10⁶ + its 30-minute window
//	country       dictionary<int16, utf8>    2          50 ISO codes, weight 1/rank^1.1 (US ≈ 26%)
//	event_type    dictionary<int8, utf8>     1          view click search add_to_cart purchase
//	                                                    login logout (56 22 8 6 3.5 3 1.5 %)
//	latency_ms    float64                    8          log-normal per event type, 3 decimals
//	bytes         int64                      8          log-normal per event type; 200–2000 on errors
//	price         float64, nullable          8 + 1/8    null unless purchase; cents
//	status        int32                      4          200 … 504, HTTP-like (≈1.5% ≥ 500)
//	user_agent    utf8                       4 + ≈19    16 short agent strings, 43% "Mobile"
//
// Only price is nullable; a null anywhere else is ErrBadData.
//
// # Files
//
// Generate writes FileName(0), FileName(1), … (events-000000.arrow) with
// arrow-go's ipc.FileWriter: the Arrow IPC file format, one schema, one
// dictionary batch per dictionary column (the same values in every file),
// then record batches of RowsPerBatch rows, optionally LZ4- or
// ZSTD-compressed, and the footer:
//
//	"ARROW1\0\0" │ schema │ dict country │ dict event_type │ batch 0 │ … │ batch n-1 │ footer │ len │ "ARROW1"
//
// The schema's metadata records where the file lies in the data set:
// MetaTSStart and MetaTSEnd bound every ts of the file ([start, end), and
// file f+1 starts where f ends), plus seed, total rows, file index and
// count. The queries take their windows from these bounds (Params), so no
// scan is needed to learn the time range.
//
// Crash safety: each file is written as ".events-NNNNNN.arrow.*.tmp",
// fsynced, renamed over its final name, and the directory is fsynced once
// all files are in place. A crash leaves whole files and perhaps temporary
// ones, never a torn file under a final name.
//
// Determinism: row i is drawn from a PCG seeded with (Seed, i/4096), so the
// rows depend on Seed, Rows, Customers, Start and Span only — not on Files,
// RowsPerBatch, Compression or Workers, nor on which goroutine draws them.
// Files are generated Workers at a time, each by two goroutines: one draws
// the rows of the next batch while the other encodes and writes the last.
//
// # Queries
//
// Queries lists them; each reads only its Columns (a scan projects them):
//
//	bytes_total               bytes                                   events, sum/min/max bytes
//	country_window            ts, country, bytes                      per country, ts in the middle fifth
//	top_customers             event_type, customer_id, price          top 10 by purchase revenue
//	latency_by_type_hour      ts, event_type, latency_ms              per hour × type, last quarter
//	server_errors_by_country  status, country, session_id            status ≥ 500, distinct sessions
//	mobile_share_by_country   country, user_agent                     share of "Mobile" agents
//	event_summary             all ten columns                         per type, middle half
//
// Run scans arrowscan Files in order, each with Scan(q.Columns), and folds
// every record into the query (an Execution, which finds its columns by
// name, so full-width records work too); RunBatches does the same over any
// sources of records.
// Reference computes the same result the slow way from arrow-go's own
// FileReader, row at a time, as the oracle.
//
// Results are equal across scan modes bit for bit: every mode delivers the
// record batches of a file in file order, and every float sum is
// accumulated in row order; nothing is parallelised inside a query. Groups
// are keyed by dictionary value, not index, so files whose dictionaries
// differ still aggregate correctly.
//
// # Concurrency and lifetimes
//
// Queries, QueryByName, Generate, Run, RunBatches and Reference may be
// called from many goroutines at once; a query runs on the goroutine that
// calls it, one scan at a time (run many queries by calling Run from many
// goroutines; they may share the Files and a pool). An
// Execution is owned by one goroutine. Records handed to Execution.Add need
// to stay valid only for the call: nothing of them is kept (dictionary
// strings that become group keys are copied).
package events
