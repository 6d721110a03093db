package bench

import (
	"fmt"
	"path"
	"strings"
)

// Selection picks modes of a workload by name: a comma-separated list of
// names or path.Match patterns ("uring-*,serial-pread"). The empty
// selection keeps every mode.
type Selection string

func (s Selection) patterns() []string {
	var ps []string
	for _, p := range strings.Split(string(s), ",") {
		if p = strings.TrimSpace(p); p != "" {
			ps = append(ps, p)
		}
	}
	return ps
}

// Keep reports whether the mode named name is selected.
func (s Selection) Keep(name string) bool {
	ps := s.patterns()
	if len(ps) == 0 {
		return true
	}
	for _, p := range ps {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Check fails when a pattern is malformed or matches none of the names the
// workload has, listing them.
func (s Selection) Check(workload string, names []string) error {
	for _, p := range s.patterns() {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("bench %s: --modes: bad pattern %q", workload, p)
		}
		found := false
		for _, n := range names {
			if ok, _ := path.Match(p, n); ok {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("bench %s: --modes: %q matches no mode of this run (its modes: %s)", workload, p, strings.Join(names, ", "))
		}
	}
	return nil
}

// Select returns the selected modes, or an error from Check.
func (s Selection) Select(workload string, modes []Mode) ([]Mode, error) {
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = m.Name
	}
	if err := s.Check(workload, names); err != nil {
		return nil, err
	}
	var kept []Mode
	for _, m := range modes {
		if s.Keep(m.Name) {
			kept = append(kept, m)
		}
	}
	return kept, nil
}

// ModeInfo is a mode a workload's run can have, for --modes list: its
// name and what it needs beyond the workload itself ("" when nothing).
type ModeInfo struct {
	Name  string
	Needs string
}

// CheckListed fails when a mode a run built is not among listed (the
// workload's ModeNames): the list that --modes list prints and Run's
// modes must not drift apart.
func CheckListed(workload string, names []string, listed []ModeInfo) error {
	known := make(map[string]bool, len(listed))
	for _, m := range listed {
		known[m.Name] = true
	}
	for _, n := range names {
		if !known[n] {
			return fmt.Errorf("bench %s: mode %q is missing from the workload's ModeNames (--modes list)", workload, n)
		}
	}
	return nil
}
