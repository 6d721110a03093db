package htmlreport

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// TestRender: every benchmark's section, charts and bars are on the page,
// with the limits drawn; nothing is loaded from elsewhere.
func TestRender(t *testing.T) {
	var b bytes.Buffer
	if err := Render(&b, fixtures(t)...); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`id="bench-read"`, `id="bench-wal"`, `id="bench-scan"`, `id="bench-kv"`, `id="bench-nexmark"`,
		"IOPS by mode and batch size", "appends/s by system and writers", "mean query latency by mode",
		"keys/s by mode", "ON/OFF throughput ratio per query", "device-bound", "CPU-bound", "device floor",
		"fio, batches of 64", "<h3>Bars</h3>", "NOT met", "met", "p50 µs per read", "p99 µs per batch",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<svg class="chart"`); n != 11 {
		t.Errorf("%d charts", n)
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
// drawn (a box of non-zero size with marks in it) and nothing is logged to
// the console as an error.
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
	if err := Render(f, fixtures(t)...); err != nil {
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
		W, H  float64
		Marks int
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path), chromedp.WaitReady("footer")); err != nil {
		t.Fatalf("Chromium: %v", err)
	}
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[[]chart](`[...document.querySelectorAll("svg.chart")].map(s => {const r = s.getBoundingClientRect(); return {W: r.width, H: r.height, Marks: s.querySelectorAll("rect.mark").length}})`))
	if err != nil {
		t.Fatalf("Chromium: %v", err)
	}
	if len(charts) != 11 {
		t.Fatalf("%d charts drawn", len(charts))
	}
	for i, c := range charts {
		if c.W <= 0 || c.H <= 0 || c.Marks == 0 {
			t.Errorf("chart %d: %+v: not drawn", i, c)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(consoleErrors) > 0 {
		t.Errorf("console: %v", consoleErrors)
	}
}
