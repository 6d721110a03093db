package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ringstore/ringstore/internal/buildinfo"
)

// SchemaVersion is the version of the JSON reports' shape
// (bench/report.schema.json): it changes when a field is renamed or
// removed or changes meaning, not when one is added.
const SchemaVersion = 1

// Report is what a benchmark prints and saves. Every benchmark's JSON
// report embeds it: the fields below are common to all of them, in
// snake_case, and WriteJSON stamps the first four.
type Report struct {
	Benchmark     string   `json:"benchmark"`
	SchemaVersion int      `json:"schema_version"`
	Timestamp     string   `json:"timestamp"` // RFC 3339, UTC, when the report was written
	Version       string   `json:"version"`   // ringstore's module version ("(devel)" from a checkout)
	Commit        string   `json:"commit"`
	Machine       Machine  `json:"machine"`
	Config        any      `json:"config"`
	Results       any      `json:"results"`
	Ratios        []Ratio  `json:"ratios"`
	Notes         []string `json:"notes,omitempty"`
}

// common returns the Report a benchmark's report embeds.
func (r *Report) common() *Report { return r }

// Stamped is a report WriteJSON can stamp: a pointer to Report or to a
// struct embedding it.
type Stamped interface{ common() *Report }

// WriteJSON writes the report to path, indented.
func (r *Report) WriteJSON(path string) error { return WriteJSON(path, r) }

// WriteJSON stamps a report (schema version, time, version, commit) and
// writes it to path, indented.
func WriteJSON(path string, r Stamped) error {
	data, err := stampedJSON(r)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("bench: write report: %w", err)
	}
	return nil
}

// WriteJSONTo is WriteJSON to w (ringstore bench --json -: stdout).
func WriteJSONTo(w io.Writer, r Stamped) error {
	data, err := stampedJSON(r)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("bench: write report: %w", err)
	}
	return nil
}

// stampedJSON stamps r and returns it indented, ending in a newline.
func stampedJSON(r Stamped) ([]byte, error) {
	c := r.common()
	bi := buildinfo.Read()
	c.SchemaVersion, c.Timestamp, c.Version, c.Commit = SchemaVersion, time.Now().UTC().Format(time.RFC3339), bi.Version, bi.Commit
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// WriteMachine prints the machine block of a report.
func WriteMachine(w io.Writer, m Machine) {
	fmt.Fprintf(w, "machine: %s %s, %d CPUs, %.1f GiB RAM, %s, commit %s\n", m.Kernel, m.Arch, m.CPUs, float64(m.MemoryBytes)/(1<<30), m.GoVersion, m.Commit)
	fmt.Fprintf(w, "data:    %s (%s on %s)\n", m.Dir, m.FileSystem, m.Device)
}

// Table renders a Markdown table.
type Table struct {
	Header []string
	Rows   [][]string
}

// Add appends a row of formatted cells.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write prints the table with aligned columns.
func (t *Table) Write(w io.Writer) {
	width := make([]int, len(t.Header))
	for i, h := range t.Header {
		width[i] = len([]rune(h))
	}
	for _, row := range t.Rows {
		for i, c := range row {
			if i < len(width) {
				width[i] = max(width[i], len([]rune(c)))
			}
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString("|")
		for i := range width {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			fmt.Fprintf(&b, " %s%s |", c, strings.Repeat(" ", width[i]-len([]rune(c))))
		}
		fmt.Fprintln(w, b.String())
	}
	line(t.Header)
	sep := make([]string, len(width))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep)
	for _, row := range t.Rows {
		line(row)
	}
}

// WriteRatios prints ratio lines.
func WriteRatios(w io.Writer, ratios []Ratio, labels map[string]string) {
	for _, r := range ratios {
		every := "not every trial of the first above every trial of the second"
		switch {
		case r.Trials < 3:
			every = fmt.Sprintf("%d %s: too few to say whether every trial of the first beats every trial of the second", r.Trials, plural(r.Trials, "trial"))
		case r.EveryTrialWins:
			every = "every trial of the first above every trial of the second"
		}
		la, lb := labels[r.A], labels[r.B]
		if la == "" {
			la = r.A
		}
		if lb == "" {
			lb = r.B
		}
		fmt.Fprintf(w, "  %-28s vs %-28s %6.2f× median, %6.2f× best (%s)\n", la, lb, r.Median, r.Best, every)
	}
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

// Whole lists numbers rounded to whole units, comma-separated (a mode's
// trials).
func Whole(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, ", ")
}
