package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ringstore/ringstore/bench/htmlreport"
)

// cmdReport renders saved JSON reports as one HTML page.
func cmdReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("report", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: ringstore report FILE.json... --html OUT\n\nRenders the JSON reports of 'ringstore bench --json' as one self-contained HTML page\n(charts with the limits each run measured; it opens offline).\nFlags:\n")
		fs.PrintDefaults()
	}
	out := fs.String("html", "", "write the page here (required)")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *out == "" {
		return usagef("report: --html OUT is required")
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
		inputs = append(inputs, htmlreport.Input{Name: filepath.Base(f), Data: data})
	}
	return writeHTML(*out, inputs, stdout)
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
