package htmlreport

import (
	"fmt"
	"math"
	"strings"
)

// series is what a bar stands for. It picks the bar's colour from palette,
// so a colour means the same thing on every chart of the page.
type series int

const (
	sURing    series = iota // ringstore on io_uring (nexmark: ON)
	sSQPoll                 // ringstore on io_uring with a kernel SQPOLL thread
	sSyscall                // plain system calls, no io_uring: pread, pwrite, fdatasync (nexmark: OFF)
	sPool                   // O_DIRECT through ringstore's buffer pool
	sMmap                   // a read-only mapping through the page cache
	sPeer                   // another project's engine
	sFio                    // fio, a tool that is not ours, doing the same I/O
	sDevice                 // the device alone: its floor
	sCPU                    // every block in memory: the CPU's floor
	sCPUReads               // every block in memory, with the reads a smaller cache adds made beside: the reads' price
	nSeries
)

// palette gives each series its legend name and colour; indexed by series.
var palette = [nSeries]struct{ name, color string }{
	sURing:    {"ringstore, io_uring", "#2e86de"},
	sSQPoll:   {"ringstore, io_uring SQPOLL", "#7fb3e6"},
	sSyscall:  {"system calls, no io_uring", "#e67e22"},
	sPool:     {"O_DIRECT + buffer pool", "#16a085"},
	sMmap:     {"mmap", "#8e44ad"},
	sPeer:     {"other engines", "#95a5a6"},
	sFio:      {"fio", "#1e6f3f"},
	sDevice:   {"device alone (floor)", "#58d68d"},
	sCPU:      {"all in memory (CPU floor)", "#d4ac0d"},
	sCPUReads: {"all in memory, with the further reads beside", "#f0d878"},
}

// scale is how a chart maps values to lengths.
type scale int

const (
	linear     scale = iota // from 0
	logScale                // decades; for latencies, which span several
	ratioScale              // log scale diverging from 1.0: a bar grows right when it is above 1, left when below
)

// mark is one bar of a chart. A missing value (NaN) is drawn as "–",
// never as a bar of length zero.
type mark struct {
	label  string
	value  float64 // the median of trials; NaN when missing
	lo, hi float64 // the trials' least and greatest; NaN when the report has no trials for it
	s      series
	why    string // why the value is missing, shown with its "–"
}

// limit is a reference line drawn across a chart: a floor, a bar, 1.0.
type limit struct {
	label string
	value float64
	class string // "limit" or "limit2"
}

// chart is one bar chart: a bar per mark with a whisker for its trials'
// spread, reference lines, and a legend naming the series drawn.
type chart struct {
	title, unit string
	scale       scale
	marks       []mark
	limits      []limit
	// spread says what the whiskers span; "" means the trials' min–max.
	spread string
}

var missing = math.NaN()

// spreadOf is the least and greatest of trials; NaN, NaN when there are none.
func spreadOf(trials []float64) (lo, hi float64) {
	if len(trials) == 0 {
		return missing, missing
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, t := range trials {
		lo, hi = math.Min(lo, t), math.Max(hi, t)
	}
	return lo, hi
}

// fmtValue writes a chart's value in its unit's way: ratios as "1.22×".
func (c *chart) fmtValue(v float64) string {
	if c.scale == ratioScale {
		return fmt.Sprintf("%.2f×", v)
	}
	return fmtNum(v)
}

// axis maps values to x positions between x0 and x1.
type axis struct {
	s        scale
	x0, x1   float64
	lo, hi   float64 // linear: 0..hi; log: decades lo..hi (exponents); ratio: log2 from -hi to hi
	origin   float64 // where bars start
	ticks    []float64
	minValue float64 // below this a log scale cannot draw (values ≤ 0)
}

func newAxis(s scale, x0, x1 float64, values []float64) axis {
	a := axis{s: s, x0: x0, x1: x1}
	switch s {
	case linear:
		for _, v := range values {
			a.hi = math.Max(a.hi, v)
		}
		if a.hi <= 0 {
			a.hi = 1
		}
		a.hi *= 1.02
		a.origin = x0
	case logScale:
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range values {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		if math.IsInf(lo, 1) {
			lo, hi = 1, 10
		}
		a.lo, a.hi = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
		if a.hi <= a.lo {
			a.hi = a.lo + 1
		}
		for e := a.lo; e <= a.hi; e++ {
			a.ticks = append(a.ticks, math.Pow(10, e))
		}
		a.origin = x0
	case ratioScale:
		m := math.Log2(1.25)
		for _, v := range values {
			if v > 0 {
				m = math.Max(m, math.Abs(math.Log2(v)))
			}
		}
		a.hi = m * 1.08
		for _, t := range []float64{1.0 / 16, 1.0 / 8, 0.25, 0.5, 1, 2, 4, 8, 16} {
			if math.Abs(math.Log2(t)) <= a.hi {
				a.ticks = append(a.ticks, t)
			}
		}
		a.origin = a.x(1)
	}
	return a
}

// x is where v lies; a value a log scale cannot draw lies at its start.
func (a axis) x(v float64) float64 {
	w := a.x1 - a.x0
	switch a.s {
	case logScale:
		if v <= 0 {
			return a.x0
		}
		return a.x0 + (math.Log10(v)-a.lo)/(a.hi-a.lo)*w
	case ratioScale:
		if v <= 0 {
			return a.x0
		}
		return a.x0 + w/2 + math.Log2(v)/a.hi*w/2
	}
	return a.x0 + v/a.hi*w
}

// draw writes c as an inline SVG; a chart without marks is not drawn.
func (c *chart) draw(b *strings.Builder) {
	if len(c.marks) == 0 {
		return
	}
	const width, right, rowH, legendRowH = 1000, 120, 22, 18
	left := 300 // room for the labels: about 7 px a character at 12 px
	for _, m := range c.marks {
		left = max(left, min(520, 7*len([]rune(m.label))+16))
	}
	var values []float64
	present := [nSeries]bool{}
	whiskers, noSpread := 0, 0
	for _, m := range c.marks {
		if math.IsNaN(m.value) {
			continue
		}
		present[m.s] = true
		values = append(values, m.value)
		if math.IsNaN(m.lo) {
			noSpread++
		} else {
			whiskers++
			values = append(values, m.lo, m.hi)
		}
	}
	for _, l := range c.limits {
		values = append(values, l.value)
	}

	// The legend: every series drawn, then the whisker's meaning, wrapped
	// into rows.
	type item struct{ swatch, text string }
	var items []item
	for s := range nSeries {
		if present[s] {
			items = append(items, item{fmt.Sprintf(`<rect class="swatch" width="12" height="12" fill="%s"/>`, palette[s].color), palette[s].name})
		}
	}
	spread := c.spread
	if spread == "" {
		spread = "min–max of trials"
	}
	if whiskers > 0 {
		items = append(items, item{`<path class="whisker sample" d="M0 6H14M0 1V11M14 1V11"/>`, spread})
	}
	var legend strings.Builder
	lx, ly := 10, 0
	for _, it := range items {
		w := 22 + 7*len([]rune(it.text)) + 18
		if lx > 10 && lx+w > width-10 {
			lx, ly = 10, ly+legendRowH
		}
		fmt.Fprintf(&legend, `<g transform="translate(%d %d)">%s<text x="18" y="11">%s</text></g>`, lx, ly, it.swatch, esc(it.text))
		lx += w
	}
	legendH := ly + legendRowH
	if noSpread > 0 {
		legendH += legendRowH
	}
	top := 34 + legendH + 6
	h := top + rowH*len(c.marks) + 34 + 14*len(c.limits)
	ax := newAxis(c.scale, float64(left), float64(width-right), values)

	fmt.Fprintf(b, `<svg class="chart" role="img" aria-label=%q viewBox="0 0 %d %d" width="%d" height="%d">`, c.title, width, h, width, h)
	fmt.Fprintf(b, `<text x="10" y="20" font-weight="600">%s</text>`, esc(c.title))
	fmt.Fprintf(b, `<g class="legend" transform="translate(0 30)">%s</g>`, legend.String())
	if noSpread > 0 {
		what := "this report has no per-trial values for these bars: no whisker drawn"
		if whiskers > 0 {
			what = fmt.Sprintf("this report has no per-trial values for %d of these bars: no whisker drawn for them", noSpread)
		}
		fmt.Fprintf(b, `<text class="nospread" x="10" y="%d">%s</text>`, 30+ly+legendRowH+12, esc(what))
	}
	axisY := top + rowH*len(c.marks)
	for _, t := range ax.ticks {
		x := ax.x(t)
		fmt.Fprintf(b, `<line class="grid" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, x, top-4, x, axisY)
		fmt.Fprintf(b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, axisY+14, c.fmtValue(t))
	}
	for i, m := range c.marks {
		y := top + i*rowH
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, left-8, y+15, esc(m.label))
		if math.IsNaN(m.value) {
			why := m.why
			if why == "" {
				why = "not in this report"
			}
			fmt.Fprintf(b, `<text class="missing" x="%.1f" y="%d">–<title>%s: %s</title></text>`, ax.origin+5, y+15, esc(m.label), esc(why))
			continue
		}
		xv := ax.x(m.value)
		x0, x1 := math.Min(ax.origin, xv), math.Max(ax.origin, xv)
		tip := fmt.Sprintf("%s: %s %s", m.label, c.fmtValue(m.value), c.unit)
		end := x1
		if !math.IsNaN(m.lo) {
			tip += fmt.Sprintf(" (trials %s–%s)", c.fmtValue(m.lo), c.fmtValue(m.hi))
		} else {
			tip += " (no per-trial values)"
		}
		fmt.Fprintf(b, `<rect class="mark" x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`,
			x0, y+3, math.Max(1, x1-x0), rowH-6, palette[m.s].color, esc(tip))
		if !math.IsNaN(m.lo) {
			xl, xh := ax.x(m.lo), ax.x(m.hi)
			yc := y + rowH/2
			fmt.Fprintf(b, `<path class="whisker" d="M%.1f %dH%.1fM%.1f %dV%dM%.1f %dV%d"><title>%s</title></path>`,
				xl, yc, xh, xl, yc-5, yc+5, xh, yc-5, yc+5, esc(m.label+": trials "+c.fmtValue(m.lo)+"–"+c.fmtValue(m.hi)))
			end = math.Max(end, xh)
		}
		fmt.Fprintf(b, `<text class="value" x="%.1f" y="%d">%s</text>`, end+5, y+15, c.fmtValue(m.value))
	}
	fmt.Fprintf(b, `<line class="axis" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, ax.origin, top-4, ax.origin, axisY)
	unit := c.unit
	switch c.scale {
	case logScale:
		unit += ", log scale"
	case ratioScale:
		unit += ", log scale around 1.0"
	}
	fmt.Fprintf(b, `<text class="unit" x="%d" y="%d" text-anchor="end">%s</text>`, left-8, axisY+14, esc(unit))
	for i, l := range c.limits {
		x := ax.x(l.value)
		fmt.Fprintf(b, `<line class="%s" x1="%.1f" y1="%d" x2="%.1f" y2="%d"><title>%s</title></line>`, l.class, x, top-4, x, axisY, esc(l.label))
		// The label stays on the page however near an edge its line is.
		lx := math.Min(math.Max(x, 160), width-160)
		fill := map[string]string{"limit": "#c0392b", "limit2": "#8e44ad"}[l.class]
		fmt.Fprintf(b, `<text class="limit-label" x="%.1f" y="%d" text-anchor="middle" fill="%s">%s</text>`, lx, axisY+30+14*i, fill, esc(l.label+": "+c.fmtValue(l.value)))
	}
	b.WriteString("</svg>\n")
}
