package events

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ringstore/ringstore/arrowscan"
)

// Run runs the named query over files, in order, on the calling goroutine:
// the time range comes from the files' schema metadata (ParamsOf), then
// each file is scanned with Scan(q.Columns) and its records folded in file
// and batch order. Errors name the file (and batch) they come from. Call
// Run from many goroutines to run many queries at once; the files may be
// shared (arrowscan allows concurrent Scanners of one File).
func Run(files []*arrowscan.File, name string) (*Result, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no files to run %s over", ErrBadOptions, name)
	}
	names := make([]string, len(files))
	schemas := make([]*arrow.Schema, len(files))
	for i, f := range files {
		names[i], schemas[i] = f.Path(), f.Schema()
	}
	p, err := ParamsOf(names, schemas)
	if err != nil {
		return nil, err
	}
	e, err := NewExecution(name, p)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := e.CheckSchema(f.Path(), f.Schema()); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if err := runFile(e, f); err != nil {
			return nil, err
		}
	}
	return e.Result(), nil
}

// runFile folds one file's records into e.
func runFile(e *Execution, f *arrowscan.File) error {
	s, err := f.Scan(e.Query().Columns)
	if err != nil {
		return fmt.Errorf("events: %s: %w", e.Query().Name, err)
	}
	err = e.AddBatches(f.Path(), s)
	if cerr := s.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("%s: closing the scan: %w", f.Path(), cerr)
	}
	if err != nil {
		return fmt.Errorf("events: %s: %w", e.Query().Name, err)
	}
	return nil
}
