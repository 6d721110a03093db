package bench

import (
	"errors"
	"fmt"
	"io"
)

// Workload is one run of a benchmark as every benchmark makes it: the
// benchmark prepares its data and builds its modes (with their probes and
// memory cgroups), and Workload.Run does the rest the same way for all of
// them — records the machine, runs the trials (each in a fresh process,
// modes interleaved), has the benchmark summarize the results, prints the
// report (heading, machine, the benchmark's body, bars, notes) and saves
// it as JSON.
type Workload struct {
	Name   string // the benchmark: read, wal, scan, kv, nexmark
	Dir    string // where its data lives: the machine record names its file system and device
	Trials int
	Modes  []Mode
	// Plan says what a trial is, for the progress line after "N modes × T
	// trials" (for example " × 2s").
	Plan     string
	Progress io.Writer // progress, as the trials run
	// Before, if set, runs after the machine is described and before the
	// trials (a caution about the machine belongs before the run).
	Before func(machine Machine)
	Out    io.Writer // the report
	JSON   string    // also save the report here ("" for not)
	JSONTo io.Writer // when set, the JSON report goes here instead of to the file JSON
	// Summarize makes the report of the results of a run on machine. An
	// error it returns is reported after the report is printed.
	Summarize func(results []ModeResult, machine Machine) (Summary, error)
}

// Summary is a benchmark's report as Workload.Run prints and saves it.
type Summary struct {
	Heading   string          // after "## bench "
	Body      func(io.Writer) // between the machine lines and the bars: the tables, the ratios
	BarsTitle string          // "bars" unless set
	Bars      []Bar
	Notes     []string
	Report    Stamped // saved as JSON; its Report's machine and notes are the benchmark's to set
}

// Run runs the workload's trials and reports them. It returns the trials'
// errors (the report is printed first, with what did run), the summary's,
// and the JSON file's.
func (w Workload) Run() error {
	machine := DescribeMachine(w.Dir)
	WriteMachine(w.Progress, machine)
	if w.Before != nil {
		w.Before(machine)
	}
	fmt.Fprintf(w.Progress, "%d modes × %d trials%s, each trial in a fresh process, modes interleaved\n", len(w.Modes), w.Trials, w.Plan)
	results, runErr := Run(w.Modes, w.Trials, w.Progress)
	s, sumErr := w.Summarize(results, machine)
	if s.Heading == "" {
		return errors.Join(runErr, sumErr)
	}
	fmt.Fprintf(w.Out, "\n## bench %s\n\n", s.Heading)
	WriteMachine(w.Out, machine)
	if s.Body != nil {
		s.Body(w.Out)
	}
	if len(s.Bars) > 0 {
		title := s.BarsTitle
		if title == "" {
			title = "bars"
		}
		fmt.Fprintf(w.Out, "\n%s:\n", title)
		WriteBars(w.Out, s.Bars)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w.Out, "note: %s\n", n)
	}
	var jsonErr error
	if w.JSONTo != nil && s.Report != nil {
		if jsonErr = WriteJSONTo(w.JSONTo, s.Report); jsonErr != nil {
			jsonErr = fmt.Errorf("bench %s: %w", w.Name, jsonErr)
		}
	} else if w.JSON != "" && s.Report != nil {
		if jsonErr = WriteJSON(w.JSON, s.Report); jsonErr == nil {
			fmt.Fprintf(w.Out, "JSON written to %s\n", w.JSON)
		} else {
			jsonErr = fmt.Errorf("bench %s: %w", w.Name, jsonErr)
		}
	}
	return errors.Join(runErr, sumErr, jsonErr)
}
