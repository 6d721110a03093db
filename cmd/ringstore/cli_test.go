package main

import (
	"strings"
	"testing"
)

// TestHelpGoesToStdout: --help of every command prints its usage on stdout,
// nothing on stderr, and exits 0.
func TestHelpGoesToStdout(t *testing.T) {
	for _, cmd := range [][]string{
		{"help"}, {"--help"}, {"probe"}, {"bench"}, {"bench", "read"}, {"bench", "wal"}, {"bench", "scan"}, {"bench", "kv"},
		{"wal", "verify"}, {"wal", "stat"}, {"wal", "dump"}, {"wal", "repair"},
		{"gen", "events"}, {"scan"}, {"kv", "stat"}, {"kv", "get"}, {"kv", "put"}, {"kv", "delete"}, {"kv", "scan"}, {"version"},
	} {
		args := cmd
		if cmd[0] != "help" && cmd[0] != "--help" {
			args = append(append([]string(nil), cmd...), "--help")
		}
		code, out, stderr := runCLI(args...)
		if code != 0 || !strings.Contains(out, "usage: ringstore") && !strings.Contains(out, "ringstore —") || stderr != "" {
			t.Errorf("%v: exit %d, stdout %.80q, stderr %q", args, code, out, stderr)
		}
	}
	_, out, _ := runCLI("help")
	for _, want := range []string{"bench read", "bench wal", "bench scan", "bench kv", "wal verify", "gen events", "kv stat", "version"} {
		if !strings.Contains(out, "ringstore "+want) {
			t.Errorf("the top-level help does not list %q", want)
		}
	}
}

// TestErrorsOneLineOnePrefix: a mistake is one line on stderr with one
// "ringstore:" prefix, then the pointer to the help; usage errors exit 2,
// whichever command makes them, and name no temporary file.
func TestErrorsOneLineOnePrefix(t *testing.T) {
	missing := t.TempDir() + "/missing"
	for _, args := range [][]string{
		{"gen", "events", "--bogus"},
		{"bench", "read", "--dir", missing},
		{"bench", "wal", "--dir", missing},
		{"bench", "scan", "--pool", "1MiB"},
		{"bench", "--trials", "0"},
		{"kv", "get"},
		{"wal", "verify"},
		{"scan", "--mode", "nope", "--query", "bytes_total", missing},
		{"nosuchcommand"},
	} {
		code, out, stderr := runCLI(args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 2 || out != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "ringstore: ") ||
			strings.Count(lines[0], "ringstore") != 1 || lines[1] != "run 'ringstore help' for usage" || strings.Contains(stderr, ".directio-check") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
		}
	}
}

// TestProbeUnwritableDir: a directory the check cannot write into (sysfs
// refuses new files even to root) is "not known", never "not supported".
func TestProbeUnwritableDir(t *testing.T) {
	code, out, stderr := runCLI("probe", "--dir", "/sys")
	if code != 0 {
		t.Fatalf("probe --dir /sys: exit %d, %s", code, stderr)
	}
	if !strings.Contains(out, "not known: the check cannot write its test file here") || strings.Contains(out, "not supported") {
		t.Errorf("probe --dir /sys:\n%s", out)
	}
}

// TestBenchModes: --modes runs only the named modes; a name that matches
// none fails, listing the workload's modes; "all" takes no --modes.
func TestBenchModes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmark")
	}
	dir := t.TempDir()
	// Modes every build has (io_uring may be compiled out).
	code, out, stderr := runCLI("bench", "read", "--dir", dir, "--size", "8MiB", "--duration", "50ms", "--trials", "1", "--no-fio", "--modes", "serial-*,parallel-pread")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "pread, serial (QD1)") || !strings.Contains(out, "pread, 64 goroutines") || strings.Contains(out, "| io_uring") {
		t.Errorf("modes not selected:\n%s", out)
	}
	code, _, stderr = runCLI("bench", "read", "--dir", dir, "--size", "8MiB", "--duration", "50ms", "--trials", "1", "--modes", "nope")
	if code != 1 || !strings.Contains(stderr, `"nope" matches no mode of this run (its modes: serial-pread`) {
		t.Errorf("unknown mode: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI("bench", "--modes", "x"); code != 2 || !strings.Contains(stderr, "flag provided but not defined: -modes") {
		t.Errorf("bench --modes: exit %d, %s", code, stderr)
	}
}
