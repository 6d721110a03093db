package testchild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const capIPCLock = 14 // CAP_IPC_LOCK

// RunWithoutIPCLock runs this test binary as a child running the test run
// (a -test.run pattern), with env added to this process's environment and
// without CAP_IPC_LOCK: the capability is dropped from the bounding set of
// the thread that starts it, so an exec as root does not get it back, and
// registered memory then counts against RLIMIT_MEMLOCK. It logs the
// child's lines that hold ok and returns its output. t is skipped where
// the child cannot be started so or skipped itself, and fails where the
// child failed or printed no line holding ok.
func RunWithoutIPCLock(t *testing.T, run string, env []string, ok string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+run, "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	started := make(chan error, 1)
	go func() {
		// The thread stays locked and ends with this goroutine: its bounding
		// set is changed for good.
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, capIPCLock, 0, 0, 0); err != nil && os.Geteuid() == 0 {
			started <- fmt.Errorf("drop CAP_IPC_LOCK from the bounding set: %w", err)
			return
		}
		started <- cmd.Start()
	}()
	if err := <-started; err != nil {
		t.Skipf("cannot start a child without CAP_IPC_LOCK: %v", err)
	}
	err := cmd.Wait()
	if strings.Contains(out.String(), "--- SKIP") {
		t.Skipf("child skipped:\n%s", out.String())
	}
	if err != nil || !strings.Contains(out.String(), ok) {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, ok) {
			t.Log(strings.TrimSpace(line))
		}
	}
	return out.String()
}

// RequireNoIPCLock fails t where this process has CAP_IPC_LOCK in effect:
// a child of RunWithoutIPCLock checks so before it relies on the limit.
func RequireNoIPCLock(t *testing.T) {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			var eff uint64
			fmt.Sscanf(strings.TrimSpace(v), "%x", &eff)
			if eff&(1<<capIPCLock) != 0 {
				t.Fatalf("the child has CAP_IPC_LOCK (CapEff %s)", strings.TrimSpace(v))
			}
		}
	}
}
