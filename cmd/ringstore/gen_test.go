package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestGenEvents(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	code, out, stderr := runCLI("gen", "events", "--rows", "30000", "--dir", dir, "--files", "3", "--batch-rows", "4000", "--compression", "lz4", "--seed", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, name := range []string{"events-000000.arrow", "events-000001.arrow", "events-000002.arrow"} {
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, p) || !strings.Contains(out, p+"\t"+itoa(st.Size())+" bytes") {
			t.Errorf("output does not list %s with its size %d:\n%s", p, st.Size(), out)
		}
	}
	if strings.Contains(stderr, "note:") {
		t.Errorf("a fresh directory gets a note: %s", stderr)
	}
	before := dirNames(t, dir)
	code, _, stderr = runCLI("gen", "events", "--rows", "1000", "--dir", dir)
	if code != 1 || !strings.Contains(stderr, "holds 4 events files of an earlier run that this run would not overwrite (events-000001.arrow, events-000001.arrow.crc, events-000002.arrow, events-000002.arrow.crc)") ||
		strings.Count(stderr, "\n") != 1 {
		t.Errorf("regenerating with fewer files: exit %d, stderr %q", code, stderr)
	}
	if after := dirNames(t, dir); after != before {
		t.Errorf("the refused run changed %s:\n%s\n%s", dir, before, after)
	}
	// Without sidecars, the earlier run's sidecar of a file it overwrites
	// would check the wrong bytes: refused too.
	if code, _, stderr := runCLI("gen", "events", "--rows", "30000", "--files", "3", "--dir", dir, "--no-sidecar"); code != 1 || !strings.Contains(stderr, "events-000000.arrow.crc") {
		t.Errorf("regenerating without sidecars: exit %d, %s", code, stderr)
	}
	// The same file count replaces its own files.
	if code, _, stderr := runCLI("gen", "events", "--rows", "3000", "--files", "3", "--dir", dir, "--seed", "8"); code != 0 {
		t.Errorf("regenerating the same files: exit %d, %s", code, stderr)
	}
	// --replace removes the earlier run's files, and nothing else.
	other := filepath.Join(dir, "notes.txt")
	os.WriteFile(other, []byte("mine"), 0o644)
	code, _, stderr = runCLI("gen", "events", "--rows", "1000", "--dir", dir, "--replace")
	if code != 0 || !strings.Contains(stderr, "removed "+filepath.Join(dir, "events-000002.arrow")) {
		t.Errorf("--replace: exit %d, %s", code, stderr)
	}
	if got := dirNames(t, dir); got != "events-000000.arrow events-000000.arrow.crc notes.txt" {
		t.Errorf("after --replace %s holds %s", dir, got)
	}
	if code, out, stderr := runCLI("scan", "--verify", dir); code != 0 || strings.Count(out, ": ok") != 1 {
		t.Errorf("scan --verify after --replace: exit %d\n%s%s", code, out, stderr)
	}
	if !regexp.MustCompile(`wrote 3 files in .*: 30000 rows, \d+ bytes \(\d+\.\d B/row, compression lz4\) in \d+\.\d\ds: \d+\.\d MB/s`).MatchString(out) {
		t.Errorf("summary line missing or malformed:\n%s", out)
	}
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestGenBadArguments(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	runCLICases(t, []cliCase{
		{"gen without data set", []string{"gen"}, 2, "gen: no data set given"},
		{"gen unknown data set", []string{"gen", "logs"}, 2, `gen: unknown data set "logs"`},
		{"zero rows", []string{"gen", "events", "--rows", "0", "--dir", dir}, 2, "--rows must be at least 1, got 0"},
		{"negative rows", []string{"gen", "events", "--rows", "-3", "--dir", dir}, 2, "--rows must be at least 1, got -3"},
		{"rows not a number", []string{"gen", "events", "--rows", "many", "--dir", dir}, 2, "invalid value"},
		{"no dir", []string{"gen", "events", "--rows", "10"}, 2, "--dir is required"},
		{"zero files", []string{"gen", "events", "--rows", "10", "--dir", dir, "--files", "0"}, 2, "--files must be at least 1"},
		{"more files than rows", []string{"gen", "events", "--rows", "2", "--dir", dir, "--files", "3"}, 2, "--files (3) must not exceed --rows (2)"},
		{"zero batch rows", []string{"gen", "events", "--rows", "10", "--dir", dir, "--batch-rows", "0"}, 2, "--batch-rows must be at least 1"},
		{"unknown compression", []string{"gen", "events", "--rows", "10", "--dir", dir, "--compression", "gzip"}, 2, `--compression must be none, lz4 or zstd, got "gzip"`},
		{"dir is a file", []string{"gen", "events", "--rows", "10", "--dir", file}, 2, file + " is not a directory"},
		{"dir under a file", []string{"gen", "events", "--rows", "10", "--dir", filepath.Join(file, "sub")}, 1, file + ": not a directory"},
		{"dir not writable", []string{"gen", "events", "--rows", "10", "--dir", "/proc/self"}, 1, "/proc/self"},
		{"stray argument", []string{"gen", "events", "--rows", "10", "--dir", dir, "extra"}, 2, `unexpected argument "extra"`},
	})
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("failed runs left files in %s: %v", dir, entries)
	}
}
