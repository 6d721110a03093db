// Package testchild gives tests that re-run their own binary as a child
// process the environment to start it with (Environ), and the crash tests
// the harness of a child killed with SIGKILL part way (RunKilled: the
// child's report lines on stdout, written by a Reporter, parsed by the
// test's own Report).
package testchild

import (
	"os"
	"strings"
)

// Environ returns this process's environment without RINGSTORE_IO_URING and
// the tests' own RINGSTORE_TEST_* variables, with atexit_sleep_ms=0 added to
// GORACE (a binary built with -race otherwise sleeps a second before it
// exits), plus extra. It is built by hand, not through os.Setenv, so values
// that are not UTF-8 pass through unchanged.
func Environ(extra ...string) []string {
	var env []string
	gorace := "GORACE="
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "RINGSTORE_IO_URING="), strings.HasPrefix(kv, "RINGSTORE_TEST_"):
		case strings.HasPrefix(kv, "GORACE="):
			gorace = kv + " "
		default:
			env = append(env, kv)
		}
	}
	env = append(env, gorace+"atexit_sleep_ms=0")
	return append(env, extra...)
}
