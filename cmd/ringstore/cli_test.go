package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// TestHelpGoesToStdout: --help of every command prints its usage on stdout,
// nothing on stderr, and exits 0.
func TestHelpGoesToStdout(t *testing.T) {
	cmds := [][]string{{"help"}, {"--help"}}
	for _, c := range cliCommands {
		cmds = append(cmds, []string{c.name})
		for _, sub := range c.subs {
			cmds = append(cmds, []string{c.name, sub})
		}
	}
	for _, cmd := range cmds {
		args := cmd
		if cmd[0] != "help" && cmd[0] != "--help" {
			args = append(append([]string(nil), cmd...), "--help")
		}
		code, out, stderr := runCLI(args...)
		if code != 0 || !strings.Contains(out, "usage: ringstore") && !strings.Contains(out, "ringstore —") || stderr != "" {
			t.Errorf("%v: exit %d, stdout %.80q, stderr %q", args, code, out, stderr)
		}
	}
}

// TestErrorsOneLineOnePrefix: a mistake is one line on stderr with one
// "ringstore:" prefix, ending with the pointer to the command's help; usage
// errors exit 2, whichever command makes them, and name no temporary file.
func TestErrorsOneLineOnePrefix(t *testing.T) {
	missing := t.TempDir() + "/missing"
	for _, args := range [][]string{
		{"gen", "events", "--bogus"},
		{"bench", "read", "--dir", missing},
		{"bench", "wal", "--dir", missing},
		{"bench", "scan", "--pool", "1MiB"},
		{"bench", "--trials", "0"},
		{"kv", "get"},
		{"kv"},
		{"kv", "frob"},
		{"wal", "verify"},
		{"wal"},
		{"gen"},
		{"state", "ls"},
		{},
		{"scan", "--mode", "nope", "--query", "bytes_total", missing},
		{"nosuchcommand"},
	} {
		code, out, stderr := runCLI(args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		help := "ringstore help"
		if len(args) > 0 && args[0] != "nosuchcommand" {
			help = "ringstore " + args[0]
			if len(args) > 1 && !strings.HasPrefix(args[1], "-") && args[1] != "frob" {
				help += " " + args[1]
			}
			help += " --help"
		}
		if code != 2 || out != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "ringstore: ") ||
			strings.Count(lines[0], "ringstore:") != 1 || !strings.HasSuffix(lines[0], "; see '"+help+"'") || strings.Contains(stderr, ".directio-check") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want one line ending with the pointer to %q)", args, code, out, stderr, help)
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

// TestBenchNexmark: a tiny run of two queries, ON and OFF, with the report
// and its JSON; bad flags are usage errors.
func TestBenchNexmark(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmark")
	}
	dir := testdir.Direct(t)
	js := filepath.Join(t.TempDir(), "nx.json")
	code, out, stderr := runCLI("bench", "nexmark", "--dir", dir, "--events", "20000", "--trials", "1", "--queries", "q1,q20", "--regime", "default", "--json", js)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	if kp := ioengine.ProbeKernel(); !kp.Compiled || !kp.Available || kp.SelfTestError != nil {
		if !strings.Contains(out, "io_uring unavailable") {
			t.Errorf("without io_uring the report does not say why only OFF ran:\n%s", out)
		}
		return
	}
	for _, want := range []string{"## bench nexmark", "| q20", "| q1 ", "geometric mean ON/OFF", "equal"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.ValidateReport(data); err != nil {
		t.Error(err)
	}
	var rep struct {
		Queries []struct {
			Query         string  `json:"query"`
			ChecksumEqual bool    `json:"checksum_equal"`
			Tested        bool    `json:"tested"`
			Why           string  `json:"why"`
			RatioBest     float64 `json:"ratio_best"`
		} `json:"queries"`
	}
	if err := json.Unmarshal(data, &rep); err != nil || len(rep.Queries) != 2 || !rep.Queries[0].ChecksumEqual {
		t.Errorf("JSON %+v, %v", rep, err)
	}
	for _, q := range rep.Queries {
		// 20,000 events are too few to time (unless the machine is slow):
		// the report says so.
		if q.Tested != (q.Why == "") || q.RatioBest <= 0 || !q.Tested && !strings.Contains(out, "not tested") {
			t.Errorf("%s: tested %v (%q), ratio %.2f; report:\n%s", q.Query, q.Tested, q.Why, q.RatioBest, out)
		}
	}
	runCLICases(t, []cliCase{
		{"unknown query", []string{"bench", "nexmark", "--queries", "q6"}, 2, `--queries: unknown query "q6"`},
		{"zero events", []string{"bench", "nexmark", "--events", "0"}, 2, "must be positive"},
		{"small cache", []string{"bench", "nexmark", "--cache", "1KiB"}, 2, "--cache must be between 32KiB"},
		{"negative large run", []string{"bench", "nexmark", "--large-min-seconds", "-1"}, 2, "--large-min-seconds from 0 to 600"},
		{"NaN large run", []string{"bench", "nexmark", "--large-min-seconds", "NaN"}, 2, "--large-min-seconds from 0 to 600"},
	})
}

// TestJSONOutputs: kv stat, get and scan, gen events and scan print JSON
// with --json; bytes that are not UTF-8 come back whole in base64.
func TestJSONOutputs(t *testing.T) {
	db := filepath.Join(testdir.Direct(t), "db")
	if code, _, stderr := runCLI("kv", "put", db, "k", "v"); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := runCLI("kv", "put", db, "m", "\xff\x00bin"); code != 0 {
		t.Fatal(stderr)
	}
	code, out, stderr := runCLI("kv", "stat", db, "--json")
	var st map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st["last_seq"] != float64(2) {
		t.Errorf("kv stat --json: exit %d, %q, %s", code, out, stderr)
	}
	code, out, stderr = runCLI("kv", "get", db, "k", "--json")
	var pair map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &pair) != nil || pair["key"] != "k" || pair["value"] != "v" || pair["found"] != true {
		t.Errorf("kv get --json: exit %d, %q, %s", code, out, stderr)
	}
	code, out, stderr = runCLI("kv", "scan", db, "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var second map[string]string
	if code != 0 || len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &second) != nil ||
		second["key"] != "m" || second["value_base64"] != base64.StdEncoding.EncodeToString([]byte("\xff\x00bin")) {
		t.Errorf("kv scan --json: exit %d, %q, %s", code, out, stderr)
	}
	if code, out, _ := runCLI("kv", "put", db, "k", "v", "--json"); code != 2 || out != "" {
		t.Errorf("kv put --json: exit %d, want 2 (put takes no --json)", code)
	}
	data := testdir.Direct(t)
	code, out, stderr = runCLI("gen", "events", "--rows", "5000", "--dir", data, "--json")
	var gen struct {
		Rows  int64 `json:"rows"`
		Bytes int64 `json:"bytes"`
		Files []struct {
			Path    string `json:"path"`
			Bytes   int64  `json:"bytes"`
			Sidecar string `json:"sidecar"`
		} `json:"files"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &gen) != nil || gen.Rows != 5000 || len(gen.Files) != 1 ||
		gen.Files[0].Bytes != gen.Bytes || gen.Files[0].Sidecar != gen.Files[0].Path+".crc" {
		t.Fatalf("gen events --json: exit %d, %q, %s", code, out, stderr)
	}
	if fi, err := os.Stat(gen.Files[0].Path); err != nil || fi.Size() != gen.Bytes {
		t.Errorf("gen events --json names %s of %d bytes: %v", gen.Files[0].Path, gen.Bytes, err)
	}
	code, out, stderr = runCLI("scan", "--mode", "pread", "--query", "bytes_total", "--json", data)
	var sc map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &sc) != nil || sc["rows_scanned"] != float64(5000) || sc["query"] != "bytes_total" {
		t.Errorf("scan --json: exit %d, %q, %s", code, out, stderr)
	}
}

// TestReport: ringstore report renders saved JSON reports as one page, or
// their charts as SVG files; missing input and no output are errors.
func TestReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.html")
	in := filepath.Join("..", "..", "bench", "htmlreport", "testdata")
	code, stdout, stderr := runCLI("report", filepath.Join(in, "kv.json"), filepath.Join(in, "nexmark.json"), "--html", out)
	if code != 0 || !strings.Contains(stdout, "HTML report written to "+out) {
		t.Fatalf("report: exit %d\n%s%s", code, stdout, stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(page), `id="bench-kv"`) || !strings.Contains(string(page), `id="bench-nexmark"`) {
		t.Errorf("page: %v", err)
	}
	svgs := filepath.Join(t.TempDir(), "charts")
	code, stdout, stderr = runCLI("report", filepath.Join(in, "kv.json"), "--svg", svgs)
	if svg, err := os.ReadFile(filepath.Join(svgs, "kv-1.svg")); code != 0 || err != nil || !strings.Contains(string(svg), "keys/s by mode") {
		t.Errorf("report --svg: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	notReport, otherJSON := filepath.Join(t.TempDir(), "notes.txt"), filepath.Join(t.TempDir(), "other.json")
	os.WriteFile(notReport, []byte("hello\n"), 0o644)
	os.WriteFile(otherJSON, []byte(`{"results": []}`), 0o644)
	os.Remove(out)
	runCLICases(t, []cliCase{
		{"no output", []string{"report", filepath.Join(in, "kv.json")}, 2, "--html OUT or --svg DIR is required"},
		{"no input", []string{"report", "--html", out}, 2, "no JSON report given"},
		{"missing input", []string{"report", "/nonexistent.json", "--html", out}, 1, "/nonexistent.json"},
		{"text", []string{"report", notReport, "--html", out}, 1, notReport + " is not a bench report: not a JSON object"},
		{"other JSON", []string{"report", filepath.Join(in, "kv.json"), otherJSON, "--html", out}, 1, otherJSON + ` is not a bench report: it has no "benchmark" field`},
		{"other JSON, svg", []string{"report", otherJSON, "--svg", svgs}, 1, otherJSON + " is not a bench report"},
	})
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a failed report wrote %s", out)
	}
}

// TestBenchTrialsAndTmpfs: with one trial the report makes no claim about
// every trial; on tmpfs the wal benchmark's caution comes before the run.
func TestBenchTrialsAndTmpfs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmark")
	}
	dir, err := os.MkdirTemp("/dev/shm", "ringstore-cli-test-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	defer os.RemoveAll(dir)
	code, out, stderr := runCLI("bench", "wal", "--dir", dir, "--no-peers", "--trials", "1", "--duration", "50ms", "--modes", "fsync-per-write,ringstore-syscall-w64")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(out, "1 trial: too few to say whether every trial of the first beats every trial of the second") || strings.Contains(out, "(every trial of the first above") {
		t.Errorf("one trial, yet the ratios claim every trial:\n%s", out)
	}
	caution := strings.Index(stderr, "CAUTION: "+dir+" is on tmpfs")
	trial := strings.Index(stderr, "trial 1/1")
	if caution < 0 || trial >= 0 && caution > trial {
		t.Errorf("the tmpfs caution does not come before the run:\n%s", stderr)
	}
}
