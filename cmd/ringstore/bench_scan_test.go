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
		{"scan zero data", []string{"bench", "scan", "--data", "0"}, 2, `bench scan: --data: "0" is not a size`},
		{"scan small limit", []string{"bench", "scan", "--mem-limit", "1MiB"}, 2, "--mem-limit must be between 64MiB and 16TiB, got 1MiB"},
		{"scan pool over the limit", []string{"bench", "scan", "--mem-limit", "256MiB", "--pool", "256MiB"}, 2, "--pool 256MiB must be below --mem-limit 256MiB"},
		{"scan pool below the pool's minimum", []string{"bench", "scan", "--pool", "1MiB"}, 2, "--pool must be between 8MiB and 16TiB, got 1MiB (a pool holds at least 8 frames of --frame 1MiB)"},
		{"scan odd frames", []string{"bench", "scan", "--frame", "6KiB"}, 2, "--frame must be a multiple of 4KiB"},
		{"scan zero queries", []string{"bench", "scan", "--queries", "0"}, 2, "--queries must be between 1 and 4096, got 0"},
		{"scan zero rounds", []string{"bench", "scan", "--rounds", "0"}, 2, "--rounds must be between 1 and"},
		{"scan zero trials", []string{"bench", "scan", "--trials", "0"}, 2, "--trials must be at least 1"},
		{"scan zero device time", []string{"bench", "scan", "--device-time", "0s"}, 2, "--device-time must be positive"},
		{"scan bad compression", []string{"bench", "scan", "--compression", "gzip"}, 2, `--compression must be none, lz4 or zstd, got "gzip"`},
		{"scan missing dir", []string{"bench", "scan", "--dir", missing}, 2, missing},
		{"scan has no duration", []string{"bench", "scan", "--duration", "1s"}, 2, "flag provided but not defined: -duration"},
		{"scan bad number", []string{"bench", "scan", "--data", "lots"}, 2, `--data: "lots" is not a size`},
		{"scan huge data", []string{"bench", "scan", "--data", "999TiB"}, 2, "--data must be between 1MiB and 16TiB, got 999TiB"},
		{"scan huge frames", []string{"bench", "scan", "--frame", "4GiB"}, 2, "--frame must be between 4KiB and 1GiB"},
		{"wal has no scan flags", []string{"bench", "wal", "--data", "10MiB"}, 2, "flag provided but not defined: -data"},
		{"all takes scan flags", []string{"bench", "--pool", "0"}, 2, `bench: --pool: "0" is not a size`},
		{"kv cache too small", []string{"bench", "kv", "--cache", "1k"}, 2, "bench kv: --cache must be between 32KiB and 16TiB, got 1k"},
		{"kv bad memory limit", []string{"bench", "kv", "--kv-mem-limit", "lots"}, 2, `--kv-mem-limit: "lots" is not a size`},
		{"read missing dir", []string{"bench", "read", "--dir", missing}, 2, "bench read: --dir: stat " + missing},
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
	code, stdout, stderr := runCLI("bench", "scan", "--dir", dir, "--data", "4MiB", "--mem-limit", "none", "--pool", "8MiB", "--frame", "64KiB",
		"--queries", "3", "--rounds", "1", "--trials", "1", "--device-time", "50ms", "--json", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"## bench scan — 3 concurrent queries", "memory:  NO LIMIT — no memory limit asked for (--mem-limit none)", "JSON written to " + out} {
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
	modes := map[any]bool{}
	for _, r := range rep.Results {
		modes[r["mode"]] = true
	}
	if !modes["pool"] || !modes["pool-nocheck"] || rep.Config["no_sidecar_check"] != false {
		t.Errorf("report: modes %v, config %v: want pool and pool-nocheck (the sidecar checks' cost), no_sidecar_check false", modes, rep.Config)
	}
	if len(rep.Results) != 6 || rep.Config["queries"] != float64(3) || rep.Config["pool_bytes"] != float64(8<<20) || rep.Config["frame_size"] != float64(64<<10) {
		t.Errorf("report: %d results, config %v", len(rep.Results), rep.Config)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("benchmark left files behind in %s: %v", dir, entries)
	}
}
