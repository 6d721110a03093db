package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/internal/seccomp"
	"github.com/ringstore/ringstore/internal/testchild"
)

func denyIOURing() error { return seccomp.DenyIOURing() }

// TestFallbackLineHasOnePrefix: when the kernel refuses io_uring (a real
// seccomp filter), the CLI says so once, with one "ringstore:" prefix (it
// printed "ringstore: ringstore: falling back"), and still works.
func TestFallbackLineHasOnePrefix(t *testing.T) {
	db := filepath.Join(t.TempDir(), "db")
	if code, _, stderr := runCLI("kv", "put", db, "k", "v", "--io-mode", "syscall"); code != 0 {
		t.Fatal(stderr)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = testchild.Environ("RINGSTORE_TEST_CLI_NO_URING=" + strings.Join([]string{"kv", "get", db, "k"}, "\n"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the CLI under seccomp: %v\n%s", err, out)
	}
	s := string(out)
	if strings.Count(s, "falling back") != 1 || !strings.Contains(s, "ringstore: ioengine: falling back") || strings.Contains(s, "ringstore: ringstore") || !strings.Contains(s, "v\n") {
		t.Errorf("output under seccomp:\n%s", s)
	}
}
