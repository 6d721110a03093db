package buildinfo

import (
	"regexp"
	"testing"
)

func TestPseudoCommit(t *testing.T) {
	for _, c := range []struct{ v, want string }{
		{"v0.0.0-20261204011522-0123456789ab", "0123456789ab"},
		{"v1.2.4-0.20261204011522-0123456789ab", "0123456789ab"},
		{"v1.2.4-rc.1.20261204011522-0123456789ab", "0123456789ab"},
		{"v2.0.1-0.20261204011522-0123456789ab+incompatible", "0123456789ab"},
		{"v1.2.3", ""},
		{"(devel)", ""},
		{"v1.2.3-beta-0123456789ab", ""},           // no timestamp
		{"v0.0.0-20261204011522-0123456789AB", ""}, // not lower-case hex
		{"", ""},
	} {
		if got := pseudoCommit(c.v); got != c.want {
			t.Errorf("pseudoCommit(%q) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestRead reads the test binary's own build information: a test binary has
// a module path and a Go version, and a commit that is hex or "unknown".
func TestRead(t *testing.T) {
	in := Read()
	if in.Version == "" || in.GoVersion == "" {
		t.Fatalf("Read() = %+v: empty version or Go version", in)
	}
	if !regexp.MustCompile(`^([0-9a-f]{7,12}(\+dirty)?( \(from git\))?|unknown)$`).MatchString(in.Commit) {
		t.Fatalf("Read().Commit = %q", in.Commit)
	}
}
