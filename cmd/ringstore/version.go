package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/ringstore/ringstore/internal/buildinfo"
)

// cmdVersion prints which ringstore this binary is.
func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	in := buildinfo.Read()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Module    string `json:"module"`
			Version   string `json:"version"`
			Commit    string `json:"commit"`
			GoVersion string `json:"go_version"`
		}{in.Module, in.Version, in.Commit, in.GoVersion})
	}
	_, err := fmt.Fprintf(stdout, "ringstore %s (commit %s, %s)\n", in.Version, in.Commit, in.GoVersion)
	return err
}
