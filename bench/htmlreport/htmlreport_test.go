package htmlreport

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

func fixtures(t *testing.T) []Input {
	t.Helper()
	var in []Input
	for _, n := range []string{"read", "wal", "scan", "kv", "nexmark"} {
		data, err := os.ReadFile(filepath.Join("testdata", n+".json"))
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, Input{Name: n + ".json", Data: data})
	}
	return in
}

// withMissing is the fixtures with values missing as a report has them
// when a mode did not run: read's io_uring batch 8 without its figures,
// and nexmark's q20 not tested.
func withMissing(t *testing.T) []Input {
	t.Helper()
	in := fixtures(t)
	edit := func(i int, f func(rep map[string]any)) {
		var rep map[string]any
		if err := json.Unmarshal(in[i].Data, &rep); err != nil {
			t.Fatal(err)
		}
		f(rep)
		data, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		in[i].Data = data
	}
	edit(0, func(rep map[string]any) {
		for _, r := range rows(rep, "results") {
			if r["mode"] == "uring-b8" {
				for _, k := range []string{"iops", "iops_best", "iops_min", "iops_max", "trial_iops", "p50_us", "p99_us", "cpu_s_per_million"} {
					delete(r, k)
				}
			}
		}
	})
	edit(4, func(rep map[string]any) {
		for _, q := range rows(rep, "queries") {
			if q["query"] == "q20" {
				q["tested"], q["why"], q["on_eps"], q["off_eps"], q["on_median_eps"], q["off_median_eps"] = false, "no state read in OFF", nil, nil, 0, 0
			}
		}
	})
	return in
}

var (
	chartElem = regexp.MustCompile(`(?s)<svg class="chart"[^>]*aria-label="([^"]*)"[^>]*>.*?</svg>`)
	barLabel  = regexp.MustCompile(`<text x="\d+" y="\d+" text-anchor="end">([^<]*)</text>`)
	zeroText  = regexp.MustCompile(`>0(\.0+)?×?<`)
	words     = regexp.MustCompile(`[\pL\pN_]+`)
)

// repeats is a pair of words that a label says twice ("io_uring, batch 1
// (batch 1)"), or "".
func repeats(label string) string {
	seen := map[string]bool{}
	w := words.FindAllString(label, -1)
	for i := 1; i < len(w); i++ {
		pair := w[i-1] + " " + w[i]
		if seen[pair] {
			return pair
		}
		seen[pair] = true
	}
	return ""
}

// TestRender: the summary comes first, with what won, by how much and the
// bars met of every report; every chart has a legend and a whisker per bar
// (or says it has no per-trial values), no label repeating itself, latency
// on a log scale and ratios around 1.0; a missing value is "–" in charts
// and tables, never 0; nothing is loaded from elsewhere.
func TestRender(t *testing.T) {
	var b bytes.Buffer
	if err := Render(&b, withMissing(t)...); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`id="bench-read"`, `id="bench-wal"`, `id="bench-scan"`, `id="bench-kv"`, `id="bench-nexmark"`,
		"IOPS by mode", "appends/s by system and writers", "mean query latency by mode",
		"keys/s by mode", "ON/OFF throughput ratio per query", "device-bound", "CPU-bound", "device floor",
		"fio, batches of 64", "<h3>Bars</h3>", "NOT met", "met", "p50 µs per read", "p99 µs per batch",
		"<th>min–max</th>", "<th>CPU s / M reads</th>", "<th>flush p50/p99 µs</th>", "<th>CPU µs/key</th>", "<th>OFF time in state reads</th>",
		"<td>176 / 384</td>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}

	sum, at := strings.Index(page, `id="summary"`), strings.Index(page, `id="bench-read"`)
	if sum < 0 || sum > at {
		t.Fatalf("no summary before the reports (at %d, reports at %d)", sum, at)
	}
	for _, want := range []struct{ kind, won, by, bars string }{
		{"read", "io_uring, batch 64: 83,790 IOPS", "8.15× the rate of pread, serial (QD1)", "1 of 2 met"},
		{"wal", "ringstore io_uring, 256 writers", "28.45× the rate of os.File append + fdatasync", "4 of 5 met"},
		{"scan", "pool (O_DIRECT + bufpool): mean query 1,730 ms", "pool: 1.54× the rate of mmap", "0 of 5 met"},
		{"kv", "ringstore MultiGet, io_uring: 88,269 keys/s", "6.29× the rate of ringstore MultiGet, syscall", "2 of 2 met"},
		{"nexmark", "ON faster in 2 of 3 queries, slower in 1", "geometric mean ON/OFF 1.07× best-of", "5 of 9 met"},
	} {
		row := regexp.MustCompile(`(?s)<tr class="summary-row" data-benchmark="` + want.kind + `">.*?</tr>`).FindString(page)
		for _, s := range []string{want.won, want.by, want.bars} {
			if !strings.Contains(html.UnescapeString(row), s) {
				t.Errorf("summary of %s lacks %q:\n%s", want.kind, s, row)
			}
		}
	}

	charts := chartElem.FindAllStringSubmatch(page, -1)
	if len(charts) != 12 {
		t.Errorf("%d charts", len(charts))
	}
	missing := 0
	for _, c := range charts {
		svg, title := c[0], c[1]
		marks, whiskers := strings.Count(svg, `class="mark"`), strings.Count(svg, `class="whisker"`)
		dashes := strings.Count(svg, `class="missing"`)
		missing += dashes
		if !strings.Contains(svg, `class="legend"`) {
			t.Errorf("%s: no legend", title)
		}
		if marks == 0 || (whiskers != marks && !strings.Contains(svg, `class="nospread"`)) {
			t.Errorf("%s: %d bars, %d whiskers, and no word on the bars without", title, marks, whiskers)
		}
		if z := zeroText.FindString(svg); z != "" {
			t.Errorf("%s: a value drawn as %s", title, z)
		}
		for _, l := range barLabel.FindAllStringSubmatch(svg, -1) {
			if r := repeats(html.UnescapeString(l[1])); r != "" {
				t.Errorf("%s: the label %q says %q twice", title, l[1], r)
			}
		}
		if strings.Contains(title, "latency") && !strings.Contains(svg, "ms, log scale") && !strings.Contains(svg, "µs, log scale") {
			t.Errorf("%s: latency not on a log scale", title)
		}
		if strings.Contains(svg, "× OFF") && (!strings.Contains(svg, "log scale around 1.0") || !strings.Contains(svg, ">1.00×<")) {
			t.Errorf("%s: a ratio chart not around 1.0", title)
		}
	}
	// io_uring batch 8 (read), q20 (nexmark: ratio, ON, OFF), and the
	// large state's modes q1 did not run.
	if missing < 4 {
		t.Errorf("%d values drawn as missing, want at least 4", missing)
	}
	if !strings.Contains(page, `<td>io_uring, batch 8</td><td>8</td><td>–</td><td>–</td><td>–</td>`) {
		t.Error("read's table does not show io_uring, batch 8's missing IOPS as –")
	}
	if !strings.Contains(page, "io_uring, batch 8: did not run") {
		t.Error("read's chart does not say io_uring, batch 8 did not run")
	}
	for _, want := range []string{"device: one group write + fdatasync, p99: 369", "device floor: 1,115", "CPU floor (memory mode&#39;s mean): 635"} {
		if !strings.Contains(page, want) {
			t.Errorf("a latency floor not labelled: %q", want)
		}
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*"(https?:)?//`).FindString(page); m != "" {
		t.Errorf("the page loads something from elsewhere: %s", m)
	}
	if strings.Contains(page, "<script") {
		t.Error("the page has a script")
	}
}

func TestRenderBadInput(t *testing.T) {
	var b bytes.Buffer
	if err := Render(&b, Input{Name: "x.json", Data: []byte("{")}, Input{Name: "y.json", Data: []byte(`{"benchmark":"other"}`)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "x.json: not a JSON report") || !strings.Contains(b.String(), `kind &#34;other&#34;`) {
		t.Errorf("bad inputs not named:\n%s", b.String())
	}
	b.Reset()
	Render(&b)
	if !strings.Contains(b.String(), "No report was given") {
		t.Error("an empty page does not say so")
	}
}

// TestRenderInChromium opens the page in headless Chromium: every chart is
// drawn (a box of non-zero size with bars in it), with a legend naming its
// series and a visible whisker on every bar (or a word that the report has
// no trials for it); a missing value is drawn as "–" and no chart text is a
// 0; the summary names what won, by how much and the bars met of every
// report; nothing is logged to the console as an error.
func TestRenderInChromium(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no Chromium here (.ci/run installs it): the page is checked without a browser by TestRender")
	}
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Render(f, withMissing(t)...); err != nil {
		t.Fatal(err)
	}
	f.Close()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var consoleErrors []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == "error" || e.Type == "assert" {
				consoleErrors = append(consoleErrors, "console error")
			}
		case *runtime.EventExceptionThrown:
			consoleErrors = append(consoleErrors, e.ExceptionDetails.Text)
		}
	}); err != nil {
		t.Fatalf("Chromium: %v", err)
	}
	type chart struct {
		Title           string
		W, H            float64
		Marks, Whiskers int
		Drawn           int // whiskers with a visible box
		Legend          []string
		NoSpread        int
		Missing         []string
		Zeros           []string
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path), chromedp.WaitReady("footer")); err != nil {
		t.Fatalf("Chromium: %v", err)
	}
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[[]chart](`[...document.querySelectorAll("svg.chart")].map(s => {
		const r = s.getBoundingClientRect();
		const whiskers = [...s.querySelectorAll("path.whisker:not(.sample)")];
		return {
			Title: s.getAttribute("aria-label"), W: r.width, H: r.height,
			Marks: s.querySelectorAll("rect.mark").length, Whiskers: whiskers.length,
			Drawn: whiskers.filter(w => { const b = w.getBoundingClientRect(); return b.height > 0 && b.width >= 0 && getComputedStyle(w).stroke !== "none"; }).length,
			Legend: [...s.querySelectorAll("g.legend text")].map(t => t.textContent),
			NoSpread: s.querySelectorAll("text.nospread").length,
			Missing: [...s.querySelectorAll("text.missing")].map(t => t.firstChild.textContent),
			Zeros: [...s.querySelectorAll("text")].map(t => t.firstChild ? t.firstChild.textContent : "").filter(x => /^0(\.0+)?×?$/.test(x)),
		};
	})`))
	if err != nil {
		t.Fatalf("Chromium: %v", err)
	}
	if len(charts) != 12 {
		t.Fatalf("%d charts drawn", len(charts))
	}
	missing := 0
	for _, c := range charts {
		if c.W <= 0 || c.H <= 0 || c.Marks == 0 {
			t.Errorf("%s: %+v: not drawn", c.Title, c)
		}
		if len(c.Legend) == 0 {
			t.Errorf("%s: no legend", c.Title)
		}
		if c.Drawn != c.Whiskers || (c.Whiskers != c.Marks && c.NoSpread == 0) {
			t.Errorf("%s: %d bars, %d whiskers (%d visible), and no word on the bars without", c.Title, c.Marks, c.Whiskers, c.Drawn)
		}
		for _, m := range c.Missing {
			if m != "–" {
				t.Errorf("%s: a missing value drawn as %q", c.Title, m)
			}
		}
		missing += len(c.Missing)
		if len(c.Zeros) > 0 {
			t.Errorf("%s: a value drawn as %q", c.Title, c.Zeros)
		}
	}
	if missing < 4 {
		t.Errorf("%d values drawn as missing, want at least 4", missing)
	}
	if !slices.Contains(charts[0].Legend, "ringstore, io_uring") || !slices.Contains(charts[0].Legend, "fio") || !slices.Contains(charts[0].Legend, "min–max of trials") {
		t.Errorf("read's legend: %q", charts[0].Legend)
	}

	type summary struct{ Kind, Won, By, Bars string }
	sums, err := chromedp.Run(ctx, chromedp.Evaluate[[]summary](`[...document.querySelectorAll("#summary tr.summary-row")].map(r => ({
		Kind: r.dataset.benchmark, Won: r.querySelector(".won").textContent, By: r.querySelector(".by").textContent, Bars: r.querySelector(".bars").textContent}))`))
	if err != nil {
		t.Fatalf("Chromium: %v", err)
	}
	if len(sums) != 5 {
		t.Errorf("%d reports in the summary, want 5", len(sums))
	}
	for _, s := range sums {
		if s.Won == "–" || !strings.Contains(s.By, "×") || !regexp.MustCompile(`\d+ of \d+ met`).MatchString(s.Bars) {
			t.Errorf("summary of %s: %+v", s.Kind, s)
		}
	}
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...[...document.querySelectorAll("#bench-read tr")].find(r => r.cells[0].textContent === "io_uring, batch 8").cells].map(c => c.textContent)`))
	if err != nil {
		t.Fatalf("Chromium: %v", err)
	}
	if len(cells) < 5 || cells[2] != "–" || cells[4] != "–" {
		t.Errorf("read's row of a mode without figures: %q", cells)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(consoleErrors) > 0 {
		t.Errorf("console: %v", consoleErrors)
	}
}
