package htmlreport

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"strings"
	"testing"
)

// TestCharts: every chart of the page comes out as its own SVG file —
// well-formed XML with the SVG namespace and its styles inside, named by
// benchmark and order, titled as on the page; a report of no known kind
// is named in the error and the rest still drawn.
func TestCharts(t *testing.T) {
	charts, err := Charts(fixtures(t)...)
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 12 {
		t.Fatalf("%d charts, want the page's 12", len(charts))
	}
	names := map[string]bool{}
	for _, c := range charts {
		names[c.Name()] = true
		svg := string(c.SVG)
		if !strings.Contains(svg, `xmlns="http://www.w3.org/2000/svg"`) || !strings.Contains(svg, "<style>") || c.Title == "" {
			t.Errorf("%s (%q): not a standalone SVG:\n%.300s", c.Name(), c.Title, svg)
		}
		d := xml.NewDecoder(bytes.NewReader(c.SVG))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Errorf("%s: not well-formed XML: %v", c.Name(), err)
				break
			}
		}
	}
	for _, want := range []string{"read-1.svg", "wal-1.svg", "wal-2.svg", "scan-1.svg", "kv-1.svg", "nexmark-1.svg"} {
		if !names[want] {
			t.Errorf("no chart %s among %v", want, names)
		}
	}
	got, err := Charts(Input{Name: "x.json", Data: []byte(`{"benchmark":"other"}`)}, fixtures(t)[0])
	if err == nil || !strings.Contains(err.Error(), "x.json") || len(got) == 0 {
		t.Errorf("an unknown kind: %d charts, %v", len(got), err)
	}
}

// TestCheck: a saved report of a known kind passes; text, JSON that is not
// an object, an object without "benchmark" and an unknown kind fail,
// naming the input.
func TestCheck(t *testing.T) {
	data, err := os.ReadFile("testdata/kv.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(Input{Name: "kv.json", Data: data}); err != nil {
		t.Errorf("a kv report: %v", err)
	}
	for _, c := range []struct{ data, want string }{
		{"hello", "in.txt is not a bench report: not a JSON object"},
		{"[1,2]", "in.txt is not a bench report: not a JSON object"},
		{`{"a":1}`, `in.txt is not a bench report: it has no "benchmark" field (want one of kv, nexmark, read, scan, wal)`},
		{`{"benchmark":"disk"}`, `in.txt: a report of kind "disk", which this package does not draw`},
	} {
		if err := Check(Input{Name: "in.txt", Data: []byte(c.data)}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.data, err, c.want)
		}
	}
}
