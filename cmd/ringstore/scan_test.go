package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/arrowscan/events"
	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/internal/testdir"
)

// genSmall writes a small events data set with the CLI and returns its
// directory and files.
func genSmall(t *testing.T, args ...string) (string, []string) {
	t.Helper()
	dir := testdir.Direct(t)
	code, _, stderr := runCLI(append([]string{"gen", "events", "--rows", "40000", "--dir", dir, "--files", "2", "--batch-rows", "6000"}, args...)...)
	if code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.arrow"))
	if err != nil || len(paths) != 2 {
		t.Fatalf("gen wrote %v (%v)", paths, err)
	}
	return dir, paths
}

// resultTable is the part of scan's output that must not depend on the
// mode: the table and its "(query: ... rows scanned)" line.
func resultTable(t *testing.T, out string) string {
	t.Helper()
	i := strings.Index(out, "\nmode ")
	if i < 0 {
		t.Fatalf("no stats line in:\n%s", out)
	}
	return out[:i]
}

// TestScanEveryModeSameResult: gen, then every query in every mode (and
// the pool on both backends); the tables are identical, the stats lines
// are there, and --check agrees with the row-at-a-time reference.
func TestScanEveryModeSameResult(t *testing.T) {
	dir, paths := genSmall(t, "--compression", "zstd")
	for _, q := range events.Queries() {
		var want string
		for _, m := range [][]string{
			{"--mode", "mmap"},
			{"--mode", "pread"},
			{"--mode", "direct", "--io", "uring"},
			{"--mode", "direct", "--io", "syscall", "--prefetch", "-1"},
			{"--mode", "pool", "--pool", "1MiB", "--frame", "64KiB"},
			{"--mode", "pool", "--io", "syscall", "--frame", "128KiB", "--pool", "2MiB"},
		} {
			args := append([]string{"scan", "--query", q.Name}, m...)
			if m[1] == "pread" {
				args = append(args, paths...) // files instead of the directory
			} else {
				args = append(args, dir)
			}
			code, out, stderr := runCLI(args...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, stderr)
			}
			got := resultTable(t, out)
			if want == "" {
				want = got
				if !strings.Contains(got, "40000 rows scanned)") || strings.Count(got, "\n") < 2 {
					t.Fatalf("%v: implausible table:\n%s", args, got)
				}
			} else if got != want {
				t.Errorf("%v: result differs from mmap's:\n%s\nmmap:\n%s", args, got, want)
			}
			stats := regexp.MustCompile(`mode ` + m[1] + `.*, query ` + q.Name + `, 2 files, 40000 rows scanned, elapsed .*\ndevice reads \d+ bytes`)
			if !stats.MatchString(out) {
				t.Errorf("%v: stats lines missing:\n%s", args, out)
			}
			if m[1] == "pool" && !regexp.MustCompile(`pool \d+ frames of \d+ KiB: hits \d+, misses [1-9]\d*,`).MatchString(out) {
				t.Errorf("%v: pool line missing or no misses:\n%s", args, out)
			}
		}
	}
	code, out, stderr := runCLI("scan", "--mode", "pool", "--query", "event_summary", "--check", dir)
	if code != 0 || !strings.Contains(out, "check: equal to the row-at-a-time reference") {
		t.Errorf("--check: exit %d, stdout %s, stderr %s", code, out, stderr)
	}
}

// TestScanDeviceReads: O_DIRECT modes count their reads in read_bytes.
func TestScanDeviceReads(t *testing.T) {
	dir, _ := genSmall(t)
	code, out, stderr := runCLI("scan", "--mode", "direct", "--query", "bytes_total", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m := regexp.MustCompile(`device reads (\d+) bytes`).FindStringSubmatch(out)
	// bytes is 8 of the ~78 bytes of a row: 40000 rows hold 320000 bytes of it.
	if m == nil || len(m[1]) < 6 {
		t.Errorf("direct scan of 320 kB of column reports device reads %v:\n%s", m, out)
	}
}

func TestScanQueryList(t *testing.T) {
	code, out, _ := runCLI("scan", "--query", "list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, q := range events.Queries() {
		if !strings.Contains(out, q.Name) || !strings.Contains(out, strings.Join(q.Columns, ",")) {
			t.Errorf("list lacks %s and its columns:\n%s", q.Name, out)
		}
	}
}

func TestScanBadArguments(t *testing.T) {
	dir, paths := genSmall(t)
	empty := t.TempDir()
	missing := filepath.Join(empty, "missing.arrow")
	runCLICases(t, []cliCase{
		{"no query", []string{"scan", "--mode", "mmap", dir}, 2, "--query is required"},
		{"unknown query", []string{"scan", "--mode", "mmap", "--query", "fastest", dir}, 2, `unknown query "fastest" (known: bytes_total,`},
		{"no mode", []string{"scan", "--query", "bytes_total", dir}, 2, "--mode is required"},
		{"unknown mode", []string{"scan", "--mode", "turbo", "--query", "bytes_total", dir}, 2, `unknown mode "turbo"`},
		{"unknown io", []string{"scan", "--mode", "direct", "--io", "fast", "--query", "bytes_total", dir}, 2, `--io`},
		{"no files", []string{"scan", "--mode", "mmap", "--query", "bytes_total"}, 2, "no files given"},
		{"missing file", []string{"scan", "--mode", "mmap", "--query", "bytes_total", missing}, 2, missing},
		{"empty dir", []string{"scan", "--mode", "mmap", "--query", "bytes_total", empty}, 2, empty + " holds no *.arrow files"},
		{"zero pool", []string{"scan", "--mode", "pool", "--pool", "0", "--query", "bytes_total", dir}, 2, `scan: --pool: "0" is not a size`},
		{"odd frame", []string{"scan", "--mode", "pool", "--frame", "6KiB", "--query", "bytes_total", dir}, 2, "--frame must be a multiple of 4KiB"},
		{"pool flag without pool", []string{"scan", "--mode", "direct", "--pool", "8MiB", "--query", "bytes_total", dir}, 2, "--pool and --frame are for --mode pool"},
		{"io flag with mmap", []string{"scan", "--mode", "mmap", "--io", "syscall", "--query", "bytes_total", dir}, 2, "--io and --prefetch are for --mode direct or pool"},
		{"pool smaller than a frame set", []string{"scan", "--mode", "pool", "--pool", "1MiB", "--frame", "512KiB", "--query", "bytes_total", dir}, 2, "--pool must be between 4MiB and 16TiB, got 1MiB (a pool holds at least 8 frames of --frame 512KiB)"},
		{"verify with a query", []string{"scan", "--verify", "--query", "bytes_total", dir}, 2, "--verify runs no query"},
		{"unknown flag", []string{"scan", "--fast", dir}, 2, "flag provided but not defined: -fast"},
		{"flags after files", []string{"scan", paths[0], "--mode", "mmap", "--query", "nope"}, 2, `unknown query "nope"`},
		{"not an arrow file", []string{"scan", "--mode", "pread", "--query", "bytes_total", "/proc/self/status"}, 1, "/proc/self/status"},
	})
}

// TestScanTruncatedFile: a file cut short at any of several places is an
// error naming the file, in every mode, never a panic or a result.
func TestScanTruncatedFile(t *testing.T) {
	_, paths := genSmall(t)
	data, err := os.ReadFile(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(filepath.Dir(paths[1]), "cut.arrow")
	for _, n := range []int{0, 7, 100, len(data) / 2, len(data) - 11, len(data) - 1} {
		if err := os.WriteFile(cut, data[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"mmap", "pread", "direct", "pool"} {
			code, out, stderr := runCLI("scan", "--mode", mode, "--query", "event_summary", paths[0], cut)
			if code != 1 || !strings.Contains(stderr, cut) || strings.Contains(stderr, "panic") || strings.Contains(out, "rows scanned") {
				t.Errorf("cut at %d of %d, mode %s: exit %d, stderr %q, stdout %q", n, len(data), mode, code, stderr, out)
			}
		}
	}
}

// TestScanVerify: gen events writes checksum sidecars; scan --verify passes
// on the files as written and fails, naming the file and batch, after one
// body byte changed — where scan --check still passes.
func TestScanVerify(t *testing.T) {
	dir := testdir.Direct(t)
	if code, _, stderr := runCLI("gen", "events", "--rows", "20000", "--batch-rows", "4096", "--dir", dir); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	path := filepath.Join(dir, "events-000000.arrow")
	if _, err := os.Stat(path + ".crc"); err != nil {
		t.Fatalf("no sidecar: %v", err)
	}
	if code, out, stderr := runCLI("scan", "--verify", dir); code != 0 || !strings.Contains(out, path+": ok:") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, stderr)
	}
	data, _ := os.ReadFile(path)
	data[len(data)/2] ^= 1
	os.WriteFile(path, data, 0o644)
	code, out, stderr := runCLI("scan", "--verify", path)
	if code != 1 || !strings.Contains(out, path+": FAILED") || !strings.Contains(stderr, "record batch") {
		t.Errorf("verify after a flipped byte: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := runCLI("scan", "--mode", "pread", "--query", "bytes_total", "--check", path); code != 0 {
		t.Logf("--check also failed here (%s): the flip hit a checked column", stderr)
	}
	nodir := testdir.Direct(t)
	if code, _, stderr := runCLI("gen", "events", "--rows", "1000", "--dir", nodir, "--no-sidecar"); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := runCLI("scan", "--verify", nodir); code != 1 || !strings.Contains(stderr, "no checksum sidecar") {
		t.Errorf("verify without a sidecar: exit %d, %s", code, stderr)
	}
}

// TestScanJSONEverywhere: --verify and --query list take --json, and
// "--json -" means stdout wherever --json is taken, bench's file too.
func TestScanJSONEverywhere(t *testing.T) {
	data := testdir.Direct(t)
	mustCLI(t, "gen", "events", "--rows", "3000", "--files", "2", "--dir", data)
	code, out, stderr := runCLI("scan", "--verify", "--json", data)
	var v struct {
		OK    bool `json:"ok"`
		Files []struct {
			Path  string `json:"path"`
			OK    bool   `json:"ok"`
			Bytes int64  `json:"bytes"`
		} `json:"files"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || !v.OK || len(v.Files) != 2 || !v.Files[1].OK || v.Files[1].Bytes <= 0 {
		t.Errorf("scan --verify --json: exit %d, %q, %s", code, out, stderr)
	}
	// A changed byte: ok false, the file's error, exit 1.
	f := filepath.Join(data, "events-000001.arrow")
	b, _ := os.ReadFile(f)
	b[len(b)/2] ^= 1
	os.WriteFile(f, b, 0o644)
	code, out, _ = runCLI("scan", "--verify", data, "--json", "-")
	v.OK, v.Files = true, nil
	if code != 1 || json.Unmarshal([]byte(out), &v) != nil || v.OK || len(v.Files) != 2 || v.Files[1].OK || !v.Files[0].OK {
		t.Errorf("scan --verify --json - of a damaged file: exit %d, %q", code, out)
	}
	code, out, _ = runCLI("scan", "--query", "list", "--json")
	var qs []struct {
		Name    string   `json:"name"`
		Columns []string `json:"columns"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &qs) != nil || len(qs) == 0 || qs[0].Name == "" || len(qs[0].Columns) == 0 {
		t.Errorf("scan --query list --json: exit %d, %q", code, out)
	}
	db := filepath.Join(testdir.Direct(t), "db")
	mustCLI(t, "kv", "put", db, "k", "v")
	for _, args := range [][]string{{"kv", "get", db, "k", "--json", "-"}, {"kv", "get", "--json=-", db, "k"}, {"kv", "stat", "--json", "-", db}} {
		code, out, stderr := runCLI(args...)
		var m map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
			t.Errorf("%v: exit %d, %q, %s", args, code, out, stderr)
		}
	}
	if code, out, _ := runCLI("wal", "stat", "--json", "-", t.TempDir()); code == 0 || strings.Contains(out, "{") {
		t.Errorf("wal stat --json - of a directory without a log: exit %d", code)
	}
	// bench --json -: the JSON alone on stdout, the Markdown report on stderr.
	code, out, stderr = runCLI("bench", "read", "--dir", t.TempDir(), "--size", "2MiB", "--duration", "30ms", "--trials", "1", "--no-fio", "--modes", "serial-pread", "--json", "-")
	if code != 0 || !strings.Contains(stderr, "## bench read") {
		t.Fatalf("bench read --json -: exit %d\n%s", code, stderr)
	}
	if err := bench.ValidateReport([]byte(out)); err != nil {
		t.Errorf("bench read --json - printed no report alone on stdout: %v\n%s", err, out)
	}
	if code, _, stderr := runCLI("bench", "read", "--json", "-", "--html", "x.html"); code != 2 || !strings.Contains(stderr, "give --json a file name, not -") {
		t.Errorf("--json - with --html: exit %d, %s", code, stderr)
	}
}

// TestScanChecksSidecar: a query over a file whose batch body has one
// flipped byte fails in every mode, naming the file and the offset of the
// chunk; with --no-sidecar-check it answers (with the changed value).
func TestScanChecksSidecar(t *testing.T) {
	dir := testdir.Direct(t)
	if code, _, stderr := runCLI("gen", "events", "--rows", "20000", "--batch-rows", "4096", "--dir", dir); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	path := filepath.Join(dir, "events-000000.arrow")
	data, _ := os.ReadFile(path)
	off := len(data) / 2
	data[off] ^= 1
	os.WriteFile(path, data, 0o644)
	want := fmt.Sprintf("%s: record batch", path)
	at := fmt.Sprintf("at offset %d", off&^4095)
	for _, mode := range []string{"mmap", "pread", "direct", "pool"} {
		code, out, stderr := runCLI("scan", "--mode", mode, "--query", "event_summary", path)
		if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, at) || !strings.Contains(stderr, "checksum sidecar says") {
			t.Errorf("%s: exit %d, want a failure naming %q and %q\n%s%s", mode, code, want, at, out, stderr)
		}
		if code, out, stderr := runCLI("scan", "--mode", mode, "--query", "event_summary", "--no-sidecar-check", path); code != 0 {
			t.Errorf("%s --no-sidecar-check: exit %d\n%s%s", mode, code, out, stderr)
		}
	}
}
