package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	code, out, stderr := runCLI("version")
	if code != 0 || stderr != "" {
		t.Fatalf("version: exit %d, stderr %q", code, stderr)
	}
	if !regexp.MustCompile(`^ringstore \S+ \(commit \S+.*, go1\.[0-9]+`).MatchString(out) {
		t.Fatalf("version printed %q", out)
	}
	code, out, _ = runCLI("version", "--json")
	var v map[string]string
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("version --json: exit %d, %q", code, out)
	}
	if v["module"] != "github.com/ringstore/ringstore" || v["version"] == "" || v["commit"] == "" || !strings.HasPrefix(v["go_version"], "go") {
		t.Fatalf("version --json: %v", v)
	}
	if code, _, stderr := runCLI("version", "extra"); code != 2 || !strings.Contains(stderr, `unexpected argument "extra"`) {
		t.Fatalf("version extra: exit %d, stderr %q", code, stderr)
	}
}
