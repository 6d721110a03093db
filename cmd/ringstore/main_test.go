package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// TestMain lets the test binary serve as the benchmark's child process.
func TestMain(m *testing.M) {
	bench.MaybeChild()
	// A child of TestFallbackLineHasOnePrefix: the CLI in a process that
	// the kernel refuses io_uring.
	if args := os.Getenv("RINGSTORE_TEST_CLI_NO_URING"); args != "" {
		if err := denyIOURing(); err != nil {
			fmt.Fprintln(os.Stderr, "seccomp:", err)
			os.Exit(3)
		}
		os.Exit(run(strings.Split(args, "\n"), os.Stdout, os.Stderr))
	}
	// A race-enabled child otherwise sleeps a second before it exits.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// cliCase is a command line and what it must do.
type cliCase struct {
	name string
	args []string
	code int
	want string // in stderr
}

// runCLICases runs each case as a subtest and checks its exit code and
// that stderr mentions what it should.
func runCLICases(t *testing.T, cases []cliCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(c.args...)
			if code != c.code {
				t.Errorf("exit code %d, want %d (stderr: %s)", code, c.code, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %q does not mention %q", stderr, c.want)
			}
		})
	}
}

func TestBadArguments(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	cases := []cliCase{
		{"no command", nil, 2, "no command given"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"unknown flag", []string{"probe", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"stray argument", []string{"probe", "extra"}, 2, `unexpected argument "extra"`},
		{"probe missing dir", []string{"probe", "--dir", missing}, 2, missing},
		{"probe dir is a file", []string{"probe", "--dir", "/proc/self/status"}, 2, "is not a directory"},
		{"unknown workload", []string{"bench", "nope"}, 2, `unknown workload "nope"`},
		{"bad size", []string{"bench", "read", "--size", "12 parsecs"}, 2, `"12 parsecs" is not a size`},
		{"negative size", []string{"bench", "read", "--size", "-1G"}, 2, "is not a size"},
		{"zero duration", []string{"bench", "read", "--duration", "0s"}, 2, "--duration must be positive"},
		{"zero trials", []string{"bench", "read", "--trials", "0"}, 2, "--trials must be at least 1"},
		{"bad duration", []string{"bench", "read", "--duration", "fast"}, 2, "invalid value"},
		{"missing file", []string{"bench", "read", "--file", missing}, 1, missing},
		{"tiny size", []string{"bench", "read", "--size", "4KiB"}, 1, "too small"},
		{"wal zero duration", []string{"bench", "wal", "--duration", "0s"}, 2, "bench wal: --duration must be positive"},
		{"wal zero trials", []string{"bench", "wal", "--trials", "0"}, 2, "bench wal: --trials must be at least 1"},
		{"wal bad duration", []string{"bench", "wal", "--duration", "soon"}, 2, "invalid value"},
		{"wal bad trials", []string{"bench", "wal", "--trials", "three"}, 2, "invalid value"},
		{"wal missing dir", []string{"bench", "wal", "--dir", missing}, 2, missing},
		{"wal dir is a file", []string{"bench", "wal", "--dir", "/proc/self/status"}, 2, "is not a directory"},
		{"wal read-only flag", []string{"bench", "wal", "--size", "1GiB"}, 2, "flag provided but not defined: -size"},
		{"wal stray argument", []string{"bench", "wal", "--no-peers", "extra"}, 2, `unexpected argument "extra"`},
		{"workload after the flags", []string{"bench", "--trials", "2", "wal"}, 2, `unexpected argument "wal": the workload goes before the flags (ringstore bench wal [flags])`},
		{"read wal-only flag", []string{"bench", "read", "--no-peers"}, 2, "flag provided but not defined: -no-peers"},
		{"all bad size", []string{"bench", "--size", "lots"}, 2, `"lots" is not a size`},
		{"all missing dir", []string{"bench", "--dir", missing}, 2, missing},
	}
	runCLICases(t, cases)
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"bench", "help"}} {
		code, out, _ := runCLI(args...)
		if code != 0 || !strings.Contains(out, "wal") {
			t.Errorf("%v: the usage does not mention the wal benchmark: %q", args, out)
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"bench", "help"}} {
		code, out, _ := runCLI(args...)
		if code != 0 || !strings.Contains(out, "usage") {
			t.Errorf("%v: code %d, output %q", args, code, out)
		}
	}
	if code, _, _ := runCLI("probe", "--help"); code != 0 {
		t.Errorf("probe --help exits %d", code)
	}
}

func TestProbeJSON(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI("probe", "--dir", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r probeReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("probe --json printed invalid JSON: %v\n%s", err, out)
	}
	if r.Dir != dir || r.Backend == "" || r.Switch == "" || r.Kernel == "" {
		t.Errorf("incomplete report: %+v", r)
	}
	if r.Available && (r.Backend != "uring" && r.Reason == "") {
		t.Errorf("io_uring available but backend %s without a reason", r.Backend)
	}
	if !r.Available && r.SetupError == "" {
		t.Errorf("io_uring unavailable without a reason")
	}
	code, text, _ := runCLI("probe", "--dir", dir)
	if code != 0 || !strings.Contains(text, "backend") || !strings.Contains(text, "O_DIRECT") {
		t.Errorf("probe text output: %q", text)
	}
}

// TestBenchReadEndToEnd runs the real benchmark briefly: child processes,
// every mode, and the JSON the issue asks for.
func TestBenchReadEndToEnd(t *testing.T) {
	dir := testdir.Direct(t)
	out := filepath.Join(t.TempDir(), "read.json")
	code, stdout, stderr := runCLI("bench", "read", "--dir", dir, "--size", "8MiB", "--duration", "150ms", "--trials", "1", "--no-fio", "--json", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.ValidateReport(data); err != nil {
		t.Error(err)
	}
	type latency struct {
		P50 float64 `json:"p50_us"`
		P99 float64 `json:"p99_us"`
	}
	var rep struct {
		Results []struct {
			Mode  string  `json:"mode"`
			Batch int     `json:"batch"`
			IOPS  float64 `json:"iops"`
			// Latency per read and per batch: each null where the mode
			// cannot measure it, at least one of them there.
			PerRead  *latency `json:"per_read"`
			PerBatch *latency `json:"per_batch"`
		} `json:"results"`
		Machine struct {
			Kernel string `json:"kernel"`
		} `json:"machine"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	want := []string{"serial-pread", "parallel-pread"}
	if kp := ioengine.ProbeKernel(); kp.Available {
		want = append(want, "uring-b1", "uring-b8", "uring-b64", "uring-b256", "uring-4x16", "uring-inline-b64", "sqpoll-b64")
	} else if !strings.Contains(stdout, "io_uring modes skipped") {
		t.Errorf("io_uring unavailable but the report does not say the modes were skipped:\n%s", stdout)
	}
	got := map[string]bool{}
	for _, r := range rep.Results {
		got[r.Mode] = true
		if r.IOPS <= 0 || r.Batch < 1 || (r.PerRead == nil && r.PerBatch == nil) {
			t.Errorf("implausible row %+v", r)
		}
		for kind, l := range map[string]*latency{"per read": r.PerRead, "per batch": r.PerBatch} {
			if l != nil && (l.P50 <= 0 || l.P99 < l.P50) {
				t.Errorf("%s: implausible latency %s: %+v", r.Mode, kind, *l)
			}
		}
		if r.Batch == 1 && r.PerRead == nil {
			t.Errorf("%s: a batch of one read has no latency per read", r.Mode)
		}
	}
	for _, m := range want {
		if !got[m] {
			t.Errorf("mode %s missing from the JSON results", m)
		}
	}
	if rep.Machine.Kernel == "" {
		t.Error("machine not recorded")
	}
	if _, err := os.Stat(dir); err == nil {
		entries, _ := os.ReadDir(dir)
		if len(entries) != 0 {
			t.Errorf("benchmark left files behind in %s: %v", dir, entries)
		}
	}
}

// TestBenchWALEndToEnd runs the wal benchmark briefly without the peers:
// child processes, every ringstore mode, and the JSON the issue asks for.
func TestBenchWALEndToEnd(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "wal.json")
	code, stdout, stderr := runCLI("bench", "wal", "--dir", dir, "--duration", "100ms", "--trials", "1", "--no-peers", "--json", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.ValidateReport(data); err != nil {
		t.Error(err)
	}
	var rep struct {
		Results []struct {
			System          string  `json:"system"`
			Mode            string  `json:"mode"`
			Writers         int     `json:"writers"`
			OpsPerS         float64 `json:"ops_per_s"`
			P50             float64 `json:"p50_us"`
			P99             float64 `json:"p99_us"`
			EntriesPerFlush float64 `json:"entries_per_flush"`
			FlushesPerS     float64 `json:"flushes_per_s"`
		} `json:"results"`
		Device struct {
			P50 float64 `json:"p50_us"`
		} `json:"device_fdatasync"`
		Ratios  []struct{ A, B string } `json:"ratios"`
		Machine struct {
			Kernel string `json:"kernel"`
		} `json:"machine"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	want := []string{"fsync-per-write", "device-fdatasync", "ringstore-syscall-w64"}
	if kp := ioengine.ProbeKernel(); kp.Available {
		want = append(want, "ringstore-uring-w1", "ringstore-uring-w16", "ringstore-uring-w64", "ringstore-uring-w256", "ringstore-sqpoll-w64")
	} else if !strings.Contains(stdout, "io_uring modes skipped") {
		t.Errorf("io_uring unavailable but the report does not say the modes were skipped:\n%s", stdout)
	}
	got := map[string]bool{}
	for _, r := range rep.Results {
		got[r.Mode] = true
		if r.System == "" || r.Writers < 1 || r.OpsPerS <= 0 || r.P50 <= 0 || r.P99 < r.P50 {
			t.Errorf("implausible row %+v", r)
		}
		// kv's writes and its log's flushes are two counters read one after
		// the other: a flush may be counted before its writes are, and in a
		// 100 ms trial at one writer (~50 flushes) that one flush is 2%.
		floor := 0.99
		if r.System == "kv" {
			floor = 0.9
		}
		if r.Mode != "device-fdatasync" && (r.EntriesPerFlush < floor || r.FlushesPerS <= 0) {
			t.Errorf("row without flush counts: %+v", r)
		}
		if r.Writers == 1 && r.EntriesPerFlush > 1.0001 {
			t.Errorf("one writer cannot put more than one entry in a flush: %+v", r)
		}
	}
	for _, m := range want {
		if !got[m] {
			t.Errorf("mode %s missing from the JSON results", m)
		}
	}
	if rep.Device.P50 <= 0 || rep.Machine.Kernel == "" || len(rep.Ratios) == 0 {
		t.Errorf("device fdatasync, machine or ratios missing: %s", data)
	}
	if !strings.Contains(stdout, "peers skipped: --no-peers") || !strings.Contains(stdout, "| ringstore syscall backend (pwrite + fdatasync), 64 writers") {
		t.Errorf("report lacks the table or the peers note:\n%s", stdout)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("benchmark left files behind in %s: %v", dir, entries)
	}
}
