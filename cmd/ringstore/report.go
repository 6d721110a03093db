package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ringstore/ringstore/bench/htmlreport"
)

// cmdReport renders saved JSON reports as one HTML page, or their charts
// as SVG files.
func cmdReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("report", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: ringstore report FILE.json... [--html OUT] [--svg DIR]\n\nRenders the JSON reports of 'ringstore bench --json' as one self-contained HTML page\n(charts with the limits each run measured; it opens offline), or each chart as an SVG file.\nFlags:\n")
		fs.PrintDefaults()
	}
	out := fs.String("html", "", "write the page here")
	svgDir := fs.String("svg", "", "write each chart here as BENCHMARK-N.svg (the directory is made if needed)")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *out == "" && *svgDir == "" {
		return usagef("report: --html OUT or --svg DIR is required")
	}
	if len(files) == 0 {
		return usagef("report: no JSON report given")
	}
	var inputs []htmlreport.Input
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		// Nothing is written unless every input is a report to draw.
		if err := htmlreport.Check(htmlreport.Input{Name: f, Data: data}); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		inputs = append(inputs, htmlreport.Input{Name: filepath.Base(f), Data: data})
	}
	if *svgDir != "" {
		if err := writeSVGs(*svgDir, inputs, stdout); err != nil {
			return err
		}
	}
	if *out == "" {
		return nil
	}
	return writeHTML(*out, inputs, stdout)
}

// writeSVGs writes every chart of the reports into dir.
func writeSVGs(dir string, inputs []htmlreport.Input, stdout io.Writer) error {
	charts, err := htmlreport.Charts(inputs...)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	for _, c := range charts {
		path := filepath.Join(dir, c.Name())
		if err := os.WriteFile(path, c.SVG, 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		fmt.Fprintf(stdout, "%s: %s\n", path, c.Title)
	}
	return nil
}

// writeHTML renders the reports into path.
func writeHTML(path string, inputs []htmlreport.Input, stdout io.Writer) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := htmlreport.Render(f, inputs...); err != nil {
		f.Close()
		return fmt.Errorf("report: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Fprintf(stdout, "HTML report written to %s\n", path)
	return nil
}
