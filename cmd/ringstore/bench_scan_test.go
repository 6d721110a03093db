package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
)

func TestBenchScanBadArguments(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	runCLICases(t, []cliCase{
		{"scan zero data", []string{"bench", "scan", "--data-mb", "0"}, 2, "bench scan: --data-mb must be between 1 and 16777216, got 0"},
		{"scan negative limit", []string{"bench", "scan", "--mem-limit-mb", "-1"}, 2, "--mem-limit-mb must be between 0 and"},
		{"scan pool over the limit", []string{"bench", "scan", "--mem-limit-mb", "256", "--pool-mb", "256"}, 2, "--pool-mb 256 must be below --mem-limit-mb 256"},
		{"scan odd frames", []string{"bench", "scan", "--frame-kb", "6"}, 2, "--frame-kb must be a multiple of 4"},
		{"scan zero queries", []string{"bench", "scan", "--queries", "0"}, 2, "--queries must be between 1 and 4096, got 0"},
		{"scan zero rounds", []string{"bench", "scan", "--rounds", "0"}, 2, "--rounds must be between 1 and"},
		{"scan zero trials", []string{"bench", "scan", "--trials", "0"}, 2, "--trials must be at least 1"},
		{"scan zero device time", []string{"bench", "scan", "--device-time", "0s"}, 2, "--device-time must be positive"},
		{"scan bad compression", []string{"bench", "scan", "--compression", "gzip"}, 2, `--compression must be none, lz4 or zstd, got "gzip"`},
		{"scan missing dir", []string{"bench", "scan", "--dir", missing}, 2, missing},
		{"scan has no duration", []string{"bench", "scan", "--duration", "1s"}, 2, "flag provided but not defined: -duration"},
		{"scan bad number", []string{"bench", "scan", "--data-mb", "lots"}, 2, "invalid value"},
		{"scan huge data", []string{"bench", "scan", "--data-mb", "99999999999"}, 2, "--data-mb must be between 1 and 16777216, got 99999999999"},
		{"scan huge frames", []string{"bench", "scan", "--frame-kb", "4194304"}, 2, "--frame-kb must be between 4 and 1048576"},
		{"wal has no scan flags", []string{"bench", "wal", "--data-mb", "10"}, 2, "flag provided but not defined: -data-mb"},
		{"all takes scan flags", []string{"bench", "--pool-mb", "0"}, 2, "bench: --pool-mb must be between 1 and"},
	})
	code, stdout, _ := runCLI("bench", "help")
	if code != 0 || !strings.Contains(stdout, "scan    12 concurrent analytic queries") {
		t.Errorf("bench help does not describe scan: %q", stdout)
	}
}

// TestBenchScanEndToEnd runs the scan benchmark on a tiny data set without
// a memory limit: the wiring of the flags, the report and the JSON.
func TestBenchScanEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmark")
	}
	dir := testdir.Direct(t)
	out := filepath.Join(t.TempDir(), "scan.json")
	code, stdout, stderr := runCLI("bench", "scan", "--dir", dir, "--data-mb", "4", "--mem-limit-mb", "0", "--pool-mb", "8", "--frame-kb", "64",
		"--queries", "3", "--rounds", "1", "--trials", "1", "--device-time", "50ms", "--json", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"## bench scan — 3 concurrent queries", "memory:  NO LIMIT — no memory limit asked for (--mem-limit-mb 0)", "JSON written to " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Config  map[string]any   `json:"config"`
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 4 || rep.Config["queries"] != float64(3) || rep.Config["pool_bytes"] != float64(8<<20) || rep.Config["frame_size"] != float64(64<<10) {
		t.Errorf("report: %d results, config %v", len(rep.Results), rep.Config)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("benchmark left files behind in %s: %v", dir, entries)
	}
}
