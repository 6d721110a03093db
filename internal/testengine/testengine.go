// Package testengine gives tests an ioengine.Engine on the backend they
// ask for, closed at cleanup.
package testengine

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/ioengine"
)

// New returns an engine made from opts with Mode set to mode (and Logf to
// t.Logf unless set), closed at test cleanup. It skips the test only when
// the kernel refused io_uring outright (EPERM, ENOSYS) or io_uring is
// compiled out; any other fallback fails the test, so a test that asked for
// io_uring never passes on the syscall backend unnoticed.
func New(t testing.TB, mode ioengine.IOMode, opts ioengine.Options) *ioengine.Engine {
	t.Helper()
	opts.Mode = mode
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	e, err := ioengine.New(opts)
	if err != nil {
		t.Fatalf("ioengine.New(%s): %v", mode, err)
	}
	want := ioengine.BackendSyscall
	switch mode {
	case ioengine.URing:
		want = ioengine.BackendURing
	case ioengine.SQPoll:
		want = ioengine.BackendSQPoll
	}
	if got := e.Backend(); got != want {
		reason := e.FallbackReason()
		e.Close()
		if Refused(reason) {
			t.Skipf("io_uring refused here: %s", reason)
		}
		t.Fatalf("engine for %s runs on %s: %s", mode, got, reason)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("engine Close: %v", err)
		}
	})
	return e
}

// Refused reports whether a fallback reason says that the kernel refused
// io_uring outright (EPERM, ENOSYS) or that it is not compiled in: the only
// reasons a test may skip for.
func Refused(reason string) bool {
	for _, s := range []string{unix.EPERM.Error(), unix.ENOSYS.Error(), errors.ErrUnsupported.Error()} {
		if strings.Contains(reason, s) {
			return true
		}
	}
	return false
}
