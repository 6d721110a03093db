// Package htmlreport renders the JSON reports of `ringstore bench` as one
// self-contained HTML page: inline CSS, charts as inline SVG drawn here, no
// script, no font or file from anywhere else, so it opens offline. Each
// report is recognized by its "benchmark" field (read, wal, scan, kv,
// nexmark) and drawn with the limits the run measured: the device's, and
// the CPU's where the report has it. A report of another kind, or one that
// is not JSON, is named on the page and skipped.
//
// The page opens with a summary: per report, what won, by how much (its
// headline ratio) and which bars were met. Every bar is a median of trials
// with a whisker from the least to the greatest trial; a chart whose report
// has no per-trial values for a bar says so instead of drawing one. A
// figure the report lacks (a mode that did not run, a query not tested) is
// "–" in charts and tables, never 0. A bar's colour names what it stands
// for (ringstore on io_uring, plain system calls, the buffer pool, mmap,
// other engines, fio, the device's floor, the CPU's floor), the same on
// every chart, and each chart's legend names those it draws. Latencies are
// on a log scale with their floors drawn and labelled; ratios on a log
// scale around 1.0. Tables keep the text report's columns.
package htmlreport

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// Input is one JSON report and the name to show for it (its file).
type Input struct {
	Name string
	Data []byte
}

// Render writes the page of the reports to w: a summary of every report at
// the top (what won, by how much, which bars were met), then each report's
// charts, tables and bars.
func Render(w io.Writer, inputs ...Input) error {
	var sections, sums strings.Builder
	var machine map[string]any
	for _, in := range inputs {
		var rep map[string]any
		if err := json.Unmarshal(in.Data, &rep); err != nil {
			fmt.Fprintf(&sections, `<p class="note">%s: not a JSON report (%s); skipped.</p>`+"\n", esc(in.Name), esc(err.Error()))
			continue
		}
		if m, ok := rep["machine"].(map[string]any); ok && machine == nil {
			machine = m
		}
		kind, _ := rep["benchmark"].(string)
		fmt.Fprintf(&sections, "<section id=%q>\n", "bench-"+kind)
		if render := renderers[kind]; render != nil {
			writeSummary(&sums, kind, in.Name, render(&sections, rep), rep)
		} else {
			fmt.Fprintf(&sections, `<p class="note">%s: a report of kind %s, which this page does not draw; skipped.</p>`, esc(in.Name), esc(fmt.Sprintf("%q", kind)))
		}
		renderBars(&sections, rep)
		renderNotes(&sections, rep)
		fmt.Fprintf(&sections, `<p class="src">from %s, %s, commit %s</p>`+"\n</section>\n", esc(in.Name), esc(str(rep["timestamp"])), esc(str(rep["commit"])))
	}
	var b strings.Builder
	b.WriteString(head)
	b.WriteString("<h1>ringstore benchmarks</h1>\n")
	if len(inputs) == 0 {
		b.WriteString(`<p class="note">No report was given.</p>`)
	}
	if sums.Len() > 0 {
		b.WriteString(`<section id="summary"><h2>Summary</h2><table class="summary"><tr><th>benchmark</th><th>what won</th><th>by how much</th><th>bars</th></tr>` + "\n")
		b.WriteString(sums.String())
		b.WriteString("</table></section>\n")
	}
	b.WriteString(sections.String())
	if machine != nil {
		fmt.Fprintf(&b, `<footer>Machine: %s %s, %v CPUs, %.1f GiB RAM, %s, data on %s (%s).</footer>`+"\n",
			esc(str(machine["kernel"])), esc(str(machine["arch"])), machine["cpus"], num(machine["memory_bytes"])/(1<<30),
			esc(str(machine["go_version"])), esc(str(machine["file_system"])), esc(str(machine["device"])))
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// headline is what a report's summary row says won, and by how much.
type headline struct{ won, by string }

// renderers draw each kind of report, its charts and tables, and say what
// won.
var renderers = map[string]func(*strings.Builder, map[string]any) headline{
	"read": renderRead, "wal": renderWAL, "scan": renderScan, "kv": renderKV, "nexmark": renderNexmark,
}

// chartCSS styles the charts, on the page and in a standalone SVG alike.
const chartCSS = `text{font:12px system-ui,sans-serif;fill:#1d2330}.axis{stroke:#556;stroke-width:1.5}.grid{stroke:#e4e6ee}.tick{fill:#667}` +
	`.limit{stroke:#c0392b;stroke-width:2;stroke-dasharray:6 4}.limit2{stroke:#8e44ad;stroke-width:2;stroke-dasharray:2 3}` +
	`.whisker{stroke:#1d2330;stroke-width:1.5;fill:none}.missing{fill:#7f8c8d;font-weight:600}.nospread{fill:#7f8c8d;font-style:italic}`

const head = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ringstore benchmarks</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1d2330}
h1{font-size:1.7em}h2{margin-top:2.2em;border-bottom:1px solid #dde;padding-bottom:.2em}
svg.chart{display:block;margin:1em 0;background:#fbfbfd;border:1px solid #e4e6ee;border-radius:6px}
` + chartCSS + `
table{border-collapse:collapse;margin:.8em 0}td,th{padding:.25em .7em;border-bottom:1px solid #eee;text-align:right}th{background:#f3f4f8}td:first-child,th:first-child{text-align:left}
table.summary td,table.summary th{text-align:left;vertical-align:top}
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

// num is v as a number, 0 when it is not one; for figures where 0 is a value.
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

// measured is m[key] when it is a positive number: a rate, a latency, a
// ratio; NaN when it is absent, null, not a number, or 0 (the reports
// write 0 for a figure they did not measure).
func measured(m map[string]any, key string) float64 {
	if v, ok := m[key].(float64); ok && v > 0 {
		return v
	}
	return missing
}

// floats is m[key] as a list of numbers (a report's per-trial values);
// nil when it is absent or holds anything else.
func floats(m map[string]any, key string) []float64 {
	arr, _ := m[key].([]any)
	out := make([]float64, 0, len(arr))
	for _, x := range arr {
		v, ok := x.(float64)
		if !ok {
			return nil
		}
		out = append(out, v)
	}
	return out
}

// trialSpread is the least and greatest of m's per-trial values under
// key; else of its minKey and maxKey fields; else NaN, NaN.
func trialSpread(m map[string]any, key, minKey, maxKey string) (lo, hi float64) {
	if lo, hi = spreadOf(floats(m, key)); !math.IsNaN(lo) {
		return lo, hi
	}
	lo, hi = measured(m, minKey), measured(m, maxKey)
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return missing, missing
	}
	return lo, hi
}

// cell writes v with format, or "–" when it is missing (NaN).
func cell(v float64, format string) string {
	if math.IsNaN(v) {
		return "–"
	}
	if format == "" {
		return fmtNum(v)
	}
	return fmt.Sprintf(format, v)
}

// rangeCell writes lo–hi, or "–" when either is missing.
func rangeCell(lo, hi float64) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return "–"
	}
	return fmtNum(lo) + "–" + fmtNum(hi)
}

// ratioCell writes a/b as "1.23×", or "–" when either is missing.
func ratioCell(a, b float64) string {
	return cell(a/b, "%.2f×")
}

func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
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

// writeSummary writes a report's row of the summary: what won, by how
// much, and its bars met, not met and not tested, by name.
func writeSummary(b *strings.Builder, kind, name string, h headline, rep map[string]any) {
	var met, notMet, untested []string
	for _, x := range rows(rep, "bars") {
		switch n := str(x["name"]); {
		case x["valid"] != true:
			untested = append(untested, n)
		case x["met"] == true:
			met = append(met, n)
		default:
			notMet = append(notMet, n)
		}
	}
	won, by := h.won, h.by
	if won == "" {
		won = "–"
	}
	if by == "" {
		by = "–"
	}
	fmt.Fprintf(b, `<tr class="summary-row" data-benchmark=%q><td><a href="#bench-%s">%s</a><br><span class="src">%s</span></td><td class="won">%s</td><td class="by">%s</td><td class="bars">`,
		kind, esc(kind), esc(kind), esc(name), esc(won), esc(by))
	tested := len(met) + len(notMet)
	if tested+len(untested) == 0 {
		b.WriteString("no bars in this report")
	} else {
		fmt.Fprintf(b, `<span class="%s">%d of %d met</span>`, map[bool]string{true: "met", false: "notmet"}[len(notMet) == 0], len(met), tested)
		if len(notMet) > 0 {
			fmt.Fprintf(b, `<br>not met: <span class="notmet">%s</span>`, esc(strings.Join(notMet, "; ")))
		}
		if len(untested) > 0 {
			fmt.Fprintf(b, `<br>not tested: <span class="untested">%s</span>`, esc(strings.Join(untested, "; ")))
		}
	}
	b.WriteString("</td></tr>\n")
}

// ratioHeadline says by how much a report's first ratio (its headline:
// the pair its benchmark is about) won: "8.15× pread, serial (QD1) in
// IOPS (median of trials; best-of 7.18×; every trial wins)".
func ratioHeadline(rep map[string]any, labels map[string]string, metric string) string {
	rs := rows(rep, "ratios")
	if len(rs) == 0 {
		return ""
	}
	r := rs[0]
	label := func(mode string) string {
		if l := labels[mode]; l != "" {
			return l
		}
		return mode
	}
	s := fmt.Sprintf("%s: %s the rate of %s in %s (median of trials; best-of %s", label(str(r["a"])), cell(measured(r, "median"), "%.2f×"), label(str(r["b"])), metric, cell(measured(r, "best"), "%.2f×"))
	if r["every_trial_wins"] == true {
		s += "; every trial wins"
	}
	return s + ")"
}

// fastest is the mark with the greatest value (or, with least, the
// smallest) among those not of the excluded series; ok is false when none
// has a value.
func fastest(marks []mark, least bool, exclude ...series) (m mark, ok bool) {
	for _, x := range marks {
		if math.IsNaN(x.value) || slices.Contains(exclude, x.s) {
			continue
		}
		if !ok || (least && x.value < m.value) || (!least && x.value > m.value) {
			m, ok = x, true
		}
	}
	return m, ok
}
