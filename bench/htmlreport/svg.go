package htmlreport

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Chart is one chart of a report as a standalone SVG file (for a README
// or a slide): the same drawing as on the page, with its styles inside.
type Chart struct {
	Benchmark string // the report's "benchmark"
	Index     int    // 1 for its first chart, 2 for the next, ...
	Title     string
	SVG       []byte
}

// Name is a file name for the chart: "read-1.svg".
func (c Chart) Name() string { return fmt.Sprintf("%s-%d.svg", c.Benchmark, c.Index) }

var (
	svgElem  = regexp.MustCompile(`(?s)<svg class="chart"[^>]*aria-label="([^"]*)"[^>]*>.*?</svg>`)
	svgStyle = `<style>` + chartCSS + `</style><rect width="100%" height="100%" fill="#fbfbfd"/>`
)

// Charts draws the charts of the reports, each as a standalone SVG. A
// report that is not JSON, or of a kind this package does not draw, gives
// no chart and an error naming it (the others are still drawn).
func Charts(inputs ...Input) ([]Chart, error) {
	var out []Chart
	var errs []string
	for _, in := range inputs {
		var rep map[string]any
		if err := json.Unmarshal(in.Data, &rep); err != nil {
			errs = append(errs, fmt.Sprintf("%s: not a JSON report (%v)", in.Name, err))
			continue
		}
		kind, _ := rep["benchmark"].(string)
		render := renderers[kind]
		if render == nil {
			errs = append(errs, fmt.Sprintf("%s: a report of kind %q, which this package does not draw", in.Name, kind))
			continue
		}
		var b strings.Builder
		render(&b, rep)
		for i, m := range svgElem.FindAllStringSubmatchIndex(b.String(), -1) {
			page := b.String()[m[0]:m[1]]
			title := unescape(b.String()[m[2]:m[3]])
			svg := strings.Replace(page, `<svg class="chart"`, `<svg xmlns="http://www.w3.org/2000/svg"`, 1)
			at := strings.Index(svg, ">") + 1
			svg = svg[:at] + svgStyle + svg[at:]
			out = append(out, Chart{Benchmark: kind, Index: i + 1, Title: title, SVG: []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + svg + "\n")})
		}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("htmlreport: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

// unescape undoes the Go quoting of a chart's title in its aria-label.
func unescape(s string) string {
	if v, err := strconv.Unquote(`"` + s + `"`); err == nil {
		return v
	}
	return s
}

// Check says whether in is a report this package draws: a JSON object
// whose "benchmark" names a kind it knows. The error names in.Name.
func Check(in Input) error {
	var rep map[string]any
	if err := json.Unmarshal(in.Data, &rep); err != nil {
		return fmt.Errorf("%s is not a bench report: not a JSON object (%v)", in.Name, err)
	}
	kind, ok := rep["benchmark"].(string)
	if !ok {
		return fmt.Errorf("%s is not a bench report: it has no \"benchmark\" field (want one of %s)", in.Name, strings.Join(Kinds(), ", "))
	}
	if renderers[kind] == nil {
		return fmt.Errorf("%s: a report of kind %q, which this package does not draw (it draws %s)", in.Name, kind, strings.Join(Kinds(), ", "))
	}
	return nil
}

// Kinds are the benchmarks whose reports this package draws, sorted.
func Kinds() []string {
	var ks []string
	for k := range renderers {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
