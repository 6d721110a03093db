package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDiagnostics: with ProfileEnv and TraceEnv set, a child writes a CPU
// profile and an execution trace named after its workload and pid; a
// directory that cannot be written to is an error naming the variable.
func TestDiagnostics(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(ProfileEnv, dir)
	t.Setenv(TraceEnv, dir)
	stop, err := startDiagnostics("unit")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	for _, ext := range []string{"pprof", "trace"} {
		path := filepath.Join(dir, "unit-"+strconv.Itoa(os.Getpid())+"."+ext)
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v (size %v)", path, err, fi)
		}
	}

	t.Setenv(TraceEnv, filepath.Join(dir, "missing", "dir"))
	if _, err := startDiagnostics("unit"); err == nil || !strings.Contains(err.Error(), TraceEnv) {
		t.Errorf("a trace directory that does not exist: %v", err)
	}
}
