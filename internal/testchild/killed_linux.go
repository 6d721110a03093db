package testchild

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Reporter writes a child's report lines to stdout, each line with one
// write, so that a SIGKILL can cut the report only between lines.
type Reporter struct {
	mu  sync.Mutex
	buf []byte
}

// Line writes one report line (a newline is added).
func (r *Reporter) Line(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = fmt.Appendf(r.buf[:0], format+"\n", args...)
	os.Stdout.Write(r.buf)
}

// Fail reports "E message" and the message on stderr, and returns the exit
// status a failed child ends with (3).
func (r *Reporter) Fail(format string, args ...any) int {
	r.Line("E "+format, args...)
	fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
	return 3
}

// Report takes a child's report lines as they come.
type Report interface {
	// Parse takes one line; an error ends the test (the rest of the
	// output is read and dropped).
	Parse(line string) error
	// Ready reports that the child is up (it has opened what it works
	// on): the kill delay starts then.
	Ready() bool
	// Failed returns the child's "E ..." line, or "".
	Failed() string
}

// RunKilled runs this test binary as a child running the tests matching
// run, with env added to this process's environment, hands its stdout to
// r line by line, kills it with SIGKILL delay after r says it is ready
// (or failed, or 30 s passed without either), and checks that it ended by
// that signal and reported no failure. life bounds the child's whole run.
// Failures are fatal to t and begin with what (say "cycle 3").
func RunKilled(t testing.TB, what, run string, env []string, r Report, delay, life time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), life+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+run, "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	parsed := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var perr error
		signaled := false
		for sc.Scan() {
			if perr != nil {
				continue
			}
			if perr = r.Parse(sc.Text()); perr == nil && (r.Ready() || r.Failed() != "") && !signaled {
				close(ready)
				signaled = true
			}
		}
		if perr == nil {
			perr = sc.Err()
		}
		if !signaled {
			close(ready)
		}
		io.Copy(io.Discard, out)
		parsed <- perr
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
	}
	time.Sleep(delay)
	cmd.Process.Signal(syscall.SIGKILL)
	perr := <-parsed
	werr := cmd.Wait()
	if perr != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", what, perr, stderr.String())
	}
	if line := r.Failed(); line != "" {
		t.Fatalf("%s: the child failed: %s\nstderr:\n%s", what, line, stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(werr, &ee) {
		t.Fatalf("%s: the child: %v\nstderr:\n%s", what, werr, stderr.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("%s: the child ended with %v before it was killed\nstderr:\n%s", what, werr, stderr.String())
	}
}
