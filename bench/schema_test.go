package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteJSONConformsToTheSchema: a report written by WriteJSON is
// stamped and passes ValidateReport; reports missing a field, with a field
// of the wrong type or of another schema version fail, naming the field.
func TestWriteJSONConformsToTheSchema(t *testing.T) {
	type own struct {
		Report
		Bars []Bar `json:"bars"`
	}
	rep := &own{Report: Report{Benchmark: "read", Machine: DescribeMachine(t.TempDir()), Config: map[string]any{"trials": 3},
		Results: []map[string]any{{"mode": "uring-b64", "label": "io_uring, batch 64"}},
		Ratios:  []Ratio{{A: "x", B: "y", Median: 2, Best: 2, Trials: 3}}},
		Bars: []Bar{NewBar("x", 1, 2, false, true, "")}}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteJSON(path, rep); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateReport(data); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if rep.SchemaVersion != SchemaVersion || rep.Timestamp == "" || rep.Commit == "" || rep.Version == "" {
		t.Errorf("not stamped: %+v", rep.Report)
	}
	for _, c := range []struct{ from, to, want string }{
		{`"schema_version": 1`, `"schema_version": 2`, "$.schema_version is 2"},
		{`"benchmark": "read"`, `"benchmark": "fast"`, "$.benchmark is fast"},
		{`"benchmark": "read"`, `"bench": "read"`, `$ has no "benchmark"`},
		{`"cpus": `, `"cpus": "two", "x": `, "$.machine.cpus is string"},
		{`"every_trial_wins": false`, `"every_trial_wins": "no"`, "$.ratios[0].every_trial_wins is string"},
		{`"met": false`, `"mat": false`, `$.bars[0] has no "met"`},
	} {
		bad := strings.Replace(string(data), c.from, c.to, 1)
		if bad == string(data) {
			t.Fatalf("%q not in the report", c.from)
		}
		if err := ValidateReport([]byte(bad)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: %v, want %q", c.from, c.to, err, c.want)
		}
	}
	if err := ValidateReport([]byte("{")); err == nil {
		t.Error("a report that is not JSON passed")
	}
}
