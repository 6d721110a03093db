// Package htmlreport renders the JSON reports of `ringstore bench` as one
// self-contained HTML page: inline CSS, charts as inline SVG drawn here, no
// script, no font or file from anywhere else, so it opens offline. Each
// report is recognized by its "benchmark" field (read, wal, scan, kv,
// nexmark) and drawn with the limits the run measured: the device's, and
// the CPU's where the report has it. A report of another kind, or one that
// is not JSON, is named on the page and skipped.
package htmlreport

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"
)

// Input is one JSON report and the name to show for it (its file).
type Input struct {
	Name string
	Data []byte
}

// Render writes the page of the reports to w.
func Render(w io.Writer, inputs ...Input) error {
	var b strings.Builder
	b.WriteString(head)
	b.WriteString("<h1>ringstore benchmarks</h1>\n")
	if len(inputs) == 0 {
		b.WriteString(`<p class="note">No report was given.</p>`)
	}
	var machine map[string]any
	for _, in := range inputs {
		var rep map[string]any
		if err := json.Unmarshal(in.Data, &rep); err != nil {
			fmt.Fprintf(&b, `<p class="note">%s: not a JSON report (%s); skipped.</p>`+"\n", esc(in.Name), esc(err.Error()))
			continue
		}
		if m, ok := rep["machine"].(map[string]any); ok && machine == nil {
			machine = m
		}
		kind, _ := rep["benchmark"].(string)
		fmt.Fprintf(&b, "<section id=%q>\n", "bench-"+kind)
		if render := renderers[kind]; render != nil {
			render(&b, rep)
		} else {
			fmt.Fprintf(&b, `<p class="note">%s: a report of kind %s, which this page does not draw; skipped.</p>`, esc(in.Name), esc(fmt.Sprintf("%q", kind)))
		}
		renderBars(&b, rep)
		renderNotes(&b, rep)
		fmt.Fprintf(&b, `<p class="src">from %s, %s, commit %s</p>`+"\n</section>\n", esc(in.Name), esc(str(rep["timestamp"])), esc(str(rep["commit"])))
	}
	if machine != nil {
		fmt.Fprintf(&b, `<footer>Machine: %s %s, %v CPUs, %.1f GiB RAM, %s, data on %s (%s).</footer>`+"\n",
			esc(str(machine["kernel"])), esc(str(machine["arch"])), machine["cpus"], num(machine["memory_bytes"])/(1<<30),
			esc(str(machine["go_version"])), esc(str(machine["file_system"])), esc(str(machine["device"])))
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// renderers draw each kind of report: its tables and charts.
var renderers = map[string]func(*strings.Builder, map[string]any){
	"read": renderRead, "wal": renderWAL, "scan": renderScan, "kv": renderKV, "nexmark": renderNexmark,
}

const head = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ringstore benchmarks</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1d2330}
h1{font-size:1.7em}h2{margin-top:2.2em;border-bottom:1px solid #dde;padding-bottom:.2em}
svg.chart{display:block;margin:1em 0;background:#fbfbfd;border:1px solid #e4e6ee;border-radius:6px}
svg text{font:12px system-ui,sans-serif;fill:#1d2330}svg .axis{stroke:#99a}svg .limit{stroke:#c0392b;stroke-width:2;stroke-dasharray:6 4}
svg .limit2{stroke:#8e44ad;stroke-width:2;stroke-dasharray:2 3}
table{border-collapse:collapse;margin:.8em 0}td,th{padding:.25em .7em;border-bottom:1px solid #eee;text-align:right}th{background:#f3f4f8}td:first-child,th:first-child{text-align:left}
.met{color:#1e8449;font-weight:600}.notmet{color:#c0392b;font-weight:600}.untested{color:#7f8c8d}
.note,.src{color:#555;font-size:.92em}footer{margin-top:3em;color:#555}
</style></head><body>
`

func esc(s string) string { return html.EscapeString(s) }

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func rows(rep map[string]any, key string) []map[string]any {
	arr, _ := rep[key].([]any)
	var out []map[string]any
	for _, x := range arr {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// bar is one bar of a chart.
type bar struct {
	label string
	value float64
	color string
}

// limit is a reference line drawn across a chart.
type limit struct {
	label string
	value float64
	class string // "limit" or "limit2"
}

const (
	colorOurs = "#2e86de"
	colorPeer = "#95a5a6"
	colorDev  = "#27ae60"
	colorOff  = "#e67e22"
)

// hbars draws a horizontal bar chart with reference lines.
func hbars(b *strings.Builder, title, unit string, bars []bar, limits []limit) {
	if len(bars) == 0 {
		return
	}
	const width, right, rowH, top = 1000, 110, 22, 34
	left := 300 // room for the labels: about 7 px a character at 12 px
	for _, x := range bars {
		left = max(left, min(520, 7*len([]rune(x.label))+16))
	}
	maxV := 0.0
	for _, x := range bars {
		maxV = math.Max(maxV, x.value)
	}
	for _, l := range limits {
		maxV = math.Max(maxV, l.value)
	}
	if maxV <= 0 {
		maxV = 1
	}
	h := top + rowH*len(bars) + 30 + 14*len(limits)
	scale := float64(width-left-right) / maxV
	fmt.Fprintf(b, `<svg class="chart" role="img" aria-label=%q viewBox="0 0 %d %d" width="%d" height="%d">`, title, width, h, width, h)
	fmt.Fprintf(b, `<text x="10" y="20" font-weight="600">%s</text>`, esc(title))
	for i, x := range bars {
		y := top + i*rowH
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, left-8, y+15, esc(x.label))
		fmt.Fprintf(b, `<rect class="mark" x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s %s</title></rect>`,
			left, y+3, math.Max(1, x.value*scale), rowH-6, x.color, esc(x.label), fmtNum(x.value), esc(unit))
		fmt.Fprintf(b, `<text x="%.1f" y="%d">%s</text>`, float64(left)+x.value*scale+5, y+15, fmtNum(x.value))
	}
	axisY := top + rowH*len(bars)
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`, left, top, left, axisY)
	fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`, left, axisY+16, esc(unit))
	for i, l := range limits {
		x := float64(left) + l.value*scale
		fmt.Fprintf(b, `<line class="%s" x1="%.1f" y1="%d" x2="%.1f" y2="%d"><title>%s</title></line>`, l.class, x, top-4, x, axisY, esc(l.label))
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#c0392b">%s</text>`, x, axisY+16+14*(i+1), esc(l.label+": "+fmtNum(l.value)))
	}
	b.WriteString("</svg>\n")
}

func fmtNum(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		s := fmt.Sprintf("%.0f", v)
		// thousands separators
		var out []byte
		for i, c := range []byte(s) {
			if i > 0 && (len(s)-i)%3 == 0 && s[0] != '-' {
				out = append(out, ',')
			}
			out = append(out, c)
		}
		return string(out)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func table(b *strings.Builder, header []string, rowsData [][]string) {
	b.WriteString("<table><tr>")
	for _, h := range header {
		fmt.Fprintf(b, "<th>%s</th>", esc(h))
	}
	b.WriteString("</tr>\n")
	for _, r := range rowsData {
		b.WriteString("<tr>")
		for _, c := range r {
			fmt.Fprintf(b, "<td>%s</td>", esc(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

func renderRead(b *strings.Builder, rep map[string]any) {
	b.WriteString("<h2>read — 4 KiB O_DIRECT random reads</h2>\n")
	var bars []bar
	var lims []limit
	var trs [][]string
	for _, r := range rows(rep, "results") {
		mode, label := str(r["mode"]), str(r["label"])
		c := colorOurs
		if strings.HasPrefix(mode, "fio") {
			c = colorDev
			if mode == "fio-qd64-batch" {
				lims = append(lims, limit{"fio, batches of 64", num(r["iops"]), "limit"})
			}
		} else if strings.Contains(mode, "pread") {
			c = colorPeer
		}
		bars = append(bars, bar{fmt.Sprintf("%s (batch %v)", label, r["batch"]), num(r["iops"]), c})
		// Latency per read and per batch, each where the mode measured it.
		lat := func(k, p string) string {
			if l, ok := r[k].(map[string]any); ok {
				return fmtNum(num(l[p]))
			}
			return "-"
		}
		trs = append(trs, []string{label, fmt.Sprint(r["batch"]), fmtNum(num(r["iops"])), lat("per_read", "p50_us"), lat("per_read", "p99_us"),
			lat("per_batch", "p50_us"), lat("per_batch", "p99_us"), fmtNum(num(r["cpu_s_per_million"]))})
	}
	hbars(b, "IOPS by mode and batch size (device limit: fio)", "IOPS", bars, lims)
	table(b, []string{"mode", "batch", "IOPS", "p50 µs per read", "p99 µs per read", "p50 µs per batch", "p99 µs per batch", "CPU s / M reads"}, trs)
}

func renderWAL(b *strings.Builder, rep map[string]any) {
	b.WriteString("<h2>wal — 1 KiB durable appends</h2>\n")
	var rate, p99 []bar
	var trs [][]string
	for _, r := range rows(rep, "results") {
		c := colorPeer
		switch str(r["system"]) {
		case "ringstore", "kv":
			c = colorOurs
		case "device":
			c = colorDev
		}
		label := str(r["label"])
		rate = append(rate, bar{label, num(r["ops_per_s"]), c})
		p99 = append(p99, bar{label, num(r["p99_us"]), c})
		trs = append(trs, []string{label, fmt.Sprint(r["writers"]), fmtNum(num(r["ops_per_s"])), fmtNum(num(r["p50_us"])), fmtNum(num(r["p99_us"])), fmtNum(num(r["entries_per_flush"]))})
	}
	hbars(b, "appends/s by system and writers", "appends/s", rate, nil)
	var lims []limit
	if d, ok := rep["device_group_write"].(map[string]any); ok {
		lims = append(lims, limit{"device: one group write + fdatasync, p99", num(d["p99_us"]), "limit"})
	}
	if d, ok := rep["device_fdatasync"].(map[string]any); ok {
		lims = append(lims, limit{"device: one fdatasync, p50", num(d["p50_us"]), "limit2"})
	}
	hbars(b, "append p99 latency (device limits drawn)", "µs", p99, lims)
	table(b, []string{"mode", "writers", "appends/s", "p50 µs", "p99 µs", "entries/flush"}, trs)
}

func renderScan(b *strings.Builder, rep map[string]any) {
	b.WriteString("<h2>scan — concurrent Arrow queries under a memory limit</h2>\n")
	var mean, p95 []bar
	var trs [][]string
	queries := map[string]map[string]float64{}
	var modes []string
	for _, r := range rows(rep, "results") {
		mode := str(r["mode"])
		c := colorPeer
		switch mode {
		case "pool":
			c = colorOurs
		case "memory":
			c = colorDev
		}
		mean = append(mean, bar{str(r["label"]), num(r["mean_ms"]), c})
		p95 = append(p95, bar{str(r["label"]), num(r["p95_ms"]), c})
		trs = append(trs, []string{str(r["label"]), fmtNum(num(r["mean_ms"])), fmtNum(num(r["p95_ms"])), fmtNum(num(r["gbps"])), fmtNum(num(r["queries_per_s"]))})
		if qm, ok := r["query_mean_ms"].(map[string]any); ok {
			modes = append(modes, mode)
			for q, v := range qm {
				if queries[q] == nil {
					queries[q] = map[string]float64{}
				}
				queries[q][mode] = num(v)
			}
		}
	}
	var lims []limit
	if f, ok := rep["floors"].(map[string]any); ok {
		lims = append(lims, limit{"device floor", num(f["device_ms"]), "limit"}, limit{"CPU floor (memory mode)", num(f["memory_mean_ms"]), "limit2"})
	}
	hbars(b, "mean query latency by mode (floors drawn)", "ms", mean, lims)
	hbars(b, "p95 query latency by mode", "ms", p95, lims)
	table(b, []string{"mode", "mean ms", "p95 ms", "GB/s", "queries/s"}, trs)
	var qs []string
	for q := range queries {
		qs = append(qs, q)
	}
	sort.Strings(qs)
	var perQuery []bar
	for _, q := range qs {
		for _, m := range modes {
			if v, ok := queries[q][m]; ok && (m == "pool" || m == "mmap") {
				c := colorPeer
				if m == "pool" {
					c = colorOurs
				}
				perQuery = append(perQuery, bar{q + " · " + m, v, c})
			}
		}
	}
	hbars(b, "mean latency per query: pool against mmap", "ms", perQuery, nil)
}

func renderKV(b *strings.Builder, rep map[string]any) {
	b.WriteString("<h2>kv — cold point reads in batches</h2>\n")
	var bars []bar
	var trs [][]string
	for _, r := range rows(rep, "results") {
		c := colorPeer
		switch str(r["system"]) {
		case "ringstore":
			c = colorOurs
		case "device":
			c = colorDev
		}
		// The device's keys/s are its IOPS ÷ the MultiGet's blocks per
		// key, 0 when unknown: then it has no bar on this keys/s axis.
		if str(r["system"]) != "device" || num(r["keys_per_s"]) > 0 {
			bars = append(bars, bar{str(r["label"]), num(r["keys_per_s"]), c})
		}
		trs = append(trs, []string{str(r["label"]), fmtNum(num(r["keys_per_s"])), fmtNum(num(r["p50_us"])), fmtNum(num(r["p99_us"])), fmtNum(num(r["cpu_us_per_key"]))})
	}
	var lims []limit
	if l, ok := rep["limits"].(map[string]any); ok {
		lims = append(lims, limit{"device-bound", num(l["device_bound_keys_per_s"]), "limit"}, limit{"CPU-bound", num(l["cpu_bound_keys_per_s"]), "limit2"})
	}
	hbars(b, "keys/s by mode (device- and CPU-bound rates drawn)", "keys/s", bars, lims)
	table(b, []string{"mode", "keys/s", "p50 µs", "p99 µs", "CPU µs/key"}, trs)
}

func renderNexmark(b *strings.Builder, rep map[string]any) {
	b.WriteString("<h2>nexmark — io_uring ON vs OFF</h2>\n")
	var ratio, on []bar
	var trs [][]string
	for _, q := range rows(rep, "queries") {
		name := str(q["query"])
		tested := q["tested"] == true
		eq := "equal"
		if q["checksum_equal"] != true {
			eq = "DIFFERS"
		}
		best, median := fmtNum(num(q["ratio_best"])), fmtNum(num(q["ratio_median"]))
		if !tested {
			best, median = "not tested", str(q["why"])
		} else {
			c := colorOurs
			if num(q["ratio_median"]) < 1 {
				c = colorOff
			}
			ratio = append(ratio, bar{name, num(q["ratio_median"]), c})
			on = append(on, bar{name + " ON", num(q["on_median_eps"]), colorOurs}, bar{name + " OFF", num(q["off_median_eps"]), colorOff})
		}
		trs = append(trs, []string{name, fmtNum(num(q["on_median_eps"])), fmtNum(num(q["off_median_eps"])), best, median, fmtNum(num(q["state_vs_cache"])), eq})
	}
	hbars(b, "ON/OFF throughput ratio per query (median of trials; 1.0 drawn)", "× OFF", ratio,
		[]limit{{"equal", 1, "limit2"}, {"geometric mean, best-of", num(rep["geomean_best"]), "limit"}})
	hbars(b, "events/s per query, ON and OFF", "events/s", on, nil)
	if len(trs) > 0 {
		table(b, []string{"query", "ON events/s", "OFF events/s", "ON/OFF best", "ON/OFF median", "state ÷ cache", "output"}, trs)
	}
	if l, ok := rep["large_state"].(map[string]any); ok {
		renderNexmarkLarge(b, l)
	}
}

// renderNexmarkLarge draws the large-state regime: ON ÷ its limit and
// ON/OFF per query, and its table. A mode that did not run is "–".
func renderNexmarkLarge(b *strings.Builder, l map[string]any) {
	fmt.Fprintf(b, "<h3>large state: %s in-flight auctions, %s active people, %s events</h3>\n", fmtNum(num(l["in_flight_auctions"])), fmtNum(num(l["active_people"])), fmtNum(num(l["events"])))
	var vsLimit, vsOff []bar
	var trs [][]string
	dash := func(v float64) string {
		if v == 0 {
			return "–"
		}
		return fmtNum(v)
	}
	for _, q := range rows(l, "queries") {
		name := str(q["query"])
		eps, _ := q["eps_median"].(map[string]any)
		if q["tested"] == true {
			if v := num(q["on_vs_limit"]); v > 0 {
				vsLimit = append(vsLimit, bar{name, v, colorOurs})
			}
			c := colorOurs
			if num(q["on_vs_off"]) < 1 {
				c = colorOff
			}
			vsOff = append(vsOff, bar{name, num(q["on_vs_off"]), c})
		}
		ratio := fmtNum(num(q["on_vs_off"]))
		if q["tested"] != true {
			ratio = "not tested: " + str(q["why"])
		}
		trs = append(trs, []string{name, dash(num(eps["on"])), dash(num(eps["on-sync"])), dash(num(eps["off"])), dash(num(eps["off-pool3"])), dash(num(eps["off-pool16"])),
			dash(num(eps["cached"])), dash(num(q["device_floor_eps"])), dash(num(q["on_vs_limit"])), ratio, dash(100 * num(q["off_state_read_share"])), dash(num(q["working_set_bytes"]) / (1 << 20))})
	}
	hbars(b, "large state: ON ÷ its limit (the lesser of all-cached and the device floor), per stateful query", "× limit", vsLimit,
		[]limit{{"bar 0.9", 0.9, "limit"}, {"the limit", 1, "limit2"}})
	hbars(b, "large state: ON/OFF per query (median of trials; 1.0 drawn)", "× OFF", vsOff, []limit{{"equal", 1, "limit2"}})
	if len(trs) > 0 {
		table(b, []string{"query", "ON", "ON, no read-ahead", "OFF", "OFF, 3 readers", "OFF, 16 readers", "all cached", "device floor", "ON ÷ limit", "ON/OFF", "OFF % in state reads", "working set MiB"}, trs)
	}
}

func renderBars(b *strings.Builder, rep map[string]any) {
	bars := rows(rep, "bars")
	if len(bars) == 0 {
		return
	}
	b.WriteString("<h3>Bars</h3><table><tr><th>bar</th><th>value</th><th>limit</th><th>state</th></tr>\n")
	for _, x := range bars {
		state, class := "NOT met", "notmet"
		switch {
		case x["valid"] != true:
			state, class = "not tested", "untested"
		case x["met"] == true:
			state, class = "met", "met"
		}
		cmp := "≥"
		if x["at_most"] == true {
			cmp = "≤"
		}
		why := ""
		if w := str(x["why"]); w != "" {
			why = " (" + w + ")"
		}
		fmt.Fprintf(b, `<tr><td>%s</td><td>%s</td><td>%s %s</td><td class="%s">%s%s</td></tr>`+"\n", esc(str(x["name"])), fmtNum(num(x["value"])), cmp, fmtNum(num(x["limit"])), class, state, esc(why))
	}
	b.WriteString("</table>\n")
}

func renderNotes(b *strings.Builder, rep map[string]any) {
	notes, _ := rep["notes"].([]any)
	if len(notes) == 0 {
		return
	}
	b.WriteString(`<details><summary>How it was measured</summary><ul class="note">`)
	for _, n := range notes {
		fmt.Fprintf(b, "<li>%s</li>", esc(str(n)))
	}
	b.WriteString("</ul></details>\n")
}
