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
	code, _, stderr = runCLI("gen", "events", "--rows", "1000", "--dir", dir)
	if code != 0 || !strings.Contains(stderr, "also holds 2 events files this run did not write (events-000001.arrow") {
		t.Errorf("regenerating with fewer files: exit %d, stderr %q", code, stderr)
	}
	if !regexp.MustCompile(`wrote 3 files in .*: 30000 rows, \d+ bytes \(\d+\.\d B/row, compression lz4\) in \d+\.\d\ds: \d+\.\d MB/s`).MatchString(out) {
		t.Errorf("summary line missing or malformed:\n%s", out)
	}
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
